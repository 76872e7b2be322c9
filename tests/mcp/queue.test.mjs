// Queues, dependencies, delayed starts and control_managed_task, as
// tests/mcp-shared/queue.behaviours.mjs has them, through this project's client.
import { test } from 'node:test';
import { makeStore, call, TASKFS_BIN } from './helpers.mjs';
import { queueBehaviours } from '../mcp-shared/queue.behaviours.mjs';

queueBehaviours(test, { makeStore, call, bin: TASKFS_BIN });
