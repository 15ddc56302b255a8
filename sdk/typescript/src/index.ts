// oncelog's TypeScript SDK: the ledger's calls over oncelog's HTTP write API.
export * from "./approvals.js";
export * from "./client.js";
export * from "./errors.js";
export * from "./identity.js";
export * from "./recordable.js";
export * from "./results.js";
export * from "./runTool.js";
export * from "./tools.js";
export * from "./limits.js";
