// The SDK without @opentelemetry/api: copied with the built package into a folder where
// nothing resolves it (tests/crosslang/test_typescript_tracing.py), it claims all the same.
//
//   node ts_plain_claim.mjs CHANNEL
import { LedgerClient } from "./sdk/index.js";

// Shown, so that the test knows the package is absent here indeed.
const otel = await import("@opentelemetry/api").then(() => true, () => false);

const client = new LedgerClient({
  url: process.env.ONCELOG_URL,
  token: process.env.ONCELOG_HTTP_WRITE_TOKEN,
  workerId: "ts-plain",
});
const claim = await client.claimExecution({
  channelId: process.argv[2],
  keyName: "untraced",
  toolName: "t",
  params: {},
});
console.log(JSON.stringify({ otel, status: claim.status, operationId: claim.execution.id }));
