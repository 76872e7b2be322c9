// The managed-task tools over Streamable HTTP: `taskfs serve` driven by
// @modelcontextprotocol/client 2.4.0 pinned to 2026-07-28 (stateless: no
// session, the request headers, a stream per request), the same
// behaviours as over stdio (../mcp-shared/tools.behaviours.mjs), then
// what HTTP adds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeHttpStore, call } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';

toolBehaviours(test, { makeStore: makeHttpStore, call });
