import { afterAll } from 'vitest';
import { dropFileTables } from './dynamo.ts';

// The int tier's setup file: each test file drops the tables it made in beforeAll once its tests are done.
afterAll(dropFileTables);
