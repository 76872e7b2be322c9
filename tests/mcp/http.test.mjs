// The managed-task tools over Streamable HTTP: `taskfs serve` driven by
// the official SDK client (1.32.2, revision 2025-11-25: a session per
// connection, Mcp-Session-Id, SSE for long-polls), the same behaviours as
// over stdio (../mcp-shared/tools.behaviours.mjs), then what HTTP adds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeHttpStore, call } from './helpers.mjs';
import { toolBehaviours } from '../mcp-shared/tools.behaviours.mjs';

toolBehaviours(test, { makeStore: makeHttpStore, call });
