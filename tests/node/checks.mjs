// What every node scenario shares: named checks, reported as one JSON line for the pytest side
// (tests/node_scenarios.py), which compares the names with the ones it expects, so a check that
// was skipped fails as surely as one that threw.
import assert from "node:assert/strict";

const passed = [];

export async function check(name, body) {
  try {
    await body();
  } catch (error) {
    console.error(`check failed: ${name}`);
    throw error;
  }
  passed.push(name);
}

export function report() {
  console.log(JSON.stringify({ checks: passed }));
}

export function env(name) {
  const value = process.env[name];
  assert.ok(value, `${name} is not set`);
  return value;
}

/** The error a promise rejects with (fails when it resolves). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected the call to fail");
}

export { assert };
