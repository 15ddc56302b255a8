import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { ConfigurationError, LedgerClient, ServeUnreachableError } from "../src/index.js";

/** A port nothing listens on: bound once by us, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

/** The client's own environment variables removed while `body` runs. */
function withoutEnv<T>(body: () => T): T {
  const saved = { url: process.env["ONCELOG_URL"], token: process.env["ONCELOG_HTTP_WRITE_TOKEN"] };
  delete process.env["ONCELOG_URL"];
  delete process.env["ONCELOG_HTTP_WRITE_TOKEN"];
  try {
    return body();
  } finally {
    if (saved.url !== undefined) process.env["ONCELOG_URL"] = saved.url;
    if (saved.token !== undefined) process.env["ONCELOG_HTTP_WRITE_TOKEN"] = saved.token;
  }
}

const isConfig = (pattern: RegExp) => (e: unknown) =>
  e instanceof ConfigurationError && e.code === "invalid_configuration" && pattern.test(e.message);

test("a missing URL or token is a typed configuration error naming the variable", () => {
  withoutEnv(() => {
    assert.throws(() => new LedgerClient({ token: "t" }), isConfig(/ONCELOG_URL/));
    assert.throws(() => new LedgerClient({ url: undefined, token: "t" }), isConfig(/ONCELOG_URL/));
    assert.throws(() => new LedgerClient({ url: "ftp://127.0.0.1:8765", token: "t" }), isConfig(/not an http/));
    assert.throws(() => new LedgerClient({ url: "no url", token: "t" }), isConfig(/not a URL/));
    assert.throws(() => new LedgerClient({ url: "http://127.0.0.1:1" }), isConfig(/ONCELOG_HTTP_WRITE_TOKEN/));
  });
});

test("the URL and token default to ONCELOG_URL and ONCELOG_HTTP_WRITE_TOKEN", () => {
  withoutEnv(() => {
    process.env["ONCELOG_URL"] = "http://127.0.0.1:8765/";
    process.env["ONCELOG_HTTP_WRITE_TOKEN"] = "t";
    try {
      assert.ok(new LedgerClient() instanceof LedgerClient);
    } finally {
      delete process.env["ONCELOG_URL"];
      delete process.env["ONCELOG_HTTP_WRITE_TOKEN"];
    }
  });
});

test("a refused connection is serve_unreachable and names the URL", async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const client = new LedgerClient({ url, token: "t", attempts: 2 });
  await assert.rejects(
    client.claimExecution({ channelId: "c", keyName: "k", toolName: "t", params: {} }),
    (e: unknown) =>
      e instanceof ServeUnreachableError &&
      e.code === "serve_unreachable" &&
      e.message.includes(`${url}/v1/claims`) &&
      e.message.includes("ECONNREFUSED"),
  );
});
