import { afterAll } from 'vitest';
import { killAllGroups } from '@flashsale/harness';

// Whatever a test file started and did not stop (a failed start, a test that threw before its clean-up)
// dies with the file: every process the harness starts leads a group of its own, killed here whole.
// Registered first, this runs after the file's own afterAll hooks.
afterAll(() => {
  killAllGroups();
});
