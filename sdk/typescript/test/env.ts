// Where the tests find the server and the vectors: set by tests/crosslang/test_typescript_sdk.py,
// which starts a broker and `oncelog serve` for them.
import { randomUUID } from "node:crypto";

import { LedgerClient, type ClientOptions } from "../src/index.js";

export const url = process.env["ONCELOG_URL"];
export const token = process.env["ONCELOG_HTTP_WRITE_TOKEN"] ?? "";
export const vectors = process.env["ONCELOG_VECTORS"];
/** Why a test against the server skips: no server was given. */
export const noServer = url === undefined ? "ONCELOG_URL is not set (no server)" : false;

export function client(options: Partial<ClientOptions> = {}): LedgerClient {
  return new LedgerClient({ url: url ?? "", token, ...options });
}

export function channel(): string {
  return `ts-${randomUUID()}`;
}

/** The approver token of the served ledger (tests/crosslang/conftest.py): a person's. */
export const approverToken = process.env["ONCELOG_TEST_APPROVER_TOKEN"] ?? "";
