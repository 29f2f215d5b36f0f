// The Daily tab's wait while today is being prepared (docs/protocol.md: about 2 s,
// doubling up to 30 s).
import assert from "node:assert/strict";
import { test } from "node:test";

import { preparingRetryMs } from "../src/daily.js";

test("day_not_ready is retried after 2 s, doubling to 30 s", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 20].map(preparingRetryMs), [2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});
