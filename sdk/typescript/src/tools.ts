// One agent run on the ledger, for JavaScript agent frameworks: the key of every tool call
// and a wrapper of tools whose `execute(input, options)` runs through the ledger (the
// Vercel AI SDK's `tool()`, and any framework with the same shape). No framework import.
import type { LedgerClient } from "./client.js";
import { InvalidArgumentError } from "./errors.js";
import type { Json } from "./identity.js";
import { type ToolContext, runTool } from "./runTool.js";
import type { PreviousAttempt } from "./results.js";

/** How the calls of one tool are keyed and claimed. */
export interface ToolPolicy {
  /** `external` (default: the call changes the world) or `pure` (free to replay). */
  effect?: "pure" | "external";
  /** A key name from the call's arguments instead of `<tool>#<k>`. */
  key?: (args: Record<string, Json>) => string;
  dedupFields?: string[];
  leaseSeconds?: number;
  reconcile?: (previous: PreviousAttempt, ctx: ToolContext) => Promise<Json | null>;
}

/**
 * One agent run: its channel, and the key of every tool call. Unless a policy gives `key`,
 * the k-th call of tool `t` is the operation `t#k` (k from 1): a rerun (a new LedgerRun on
 * the same channel) replays `t#1`, and a rerun whose k-th call has other arguments throws
 * a `ConflictError` instead of a second effect, as Python's `LedgerRun` does.
 */
export class LedgerRun {
  private readonly calls = new Map<string, number>();

  constructor(
    readonly client: LedgerClient,
    readonly channelId: string,
    readonly policies: Record<string, ToolPolicy> = {},
  ) {}

  /** Run `fn` as the next call of `toolName` with `args`, through the ledger. */
  async call<R extends Json>(
    toolName: string,
    args: Record<string, Json>,
    fn: (ctx: ToolContext) => Promise<R>,
  ): Promise<R> {
    const policy = this.policies[toolName] ?? {};
    const k = (this.calls.get(toolName) ?? 0) + 1;
    this.calls.set(toolName, k);
    const keyName = policy.key === undefined ? `${toolName}#${k}` : policy.key(args);
    const run = await runTool<R>(this.client, {
      channelId: this.channelId,
      keyName,
      toolName,
      params: args,
      dedupFields: policy.dedupFields ?? null,
      leaseSeconds: policy.leaseSeconds ?? 60,
      effect: policy.effect ?? "external",
      fn,
      ...(policy.reconcile === undefined
        ? {}
        : { reconcile: policy.reconcile as (p: PreviousAttempt, c: ToolContext) => Promise<R | null> }),
    });
    return run.result;
  }
}

type AnyTool = { execute?: (...args: never[]) => unknown };

/**
 * The same tools, each `execute` claimed, replayed on a rerun, completed or failed through
 * `run`. The input must be a JSON object and the output JSON: they are what is recorded.
 */
export function ledgerTools<T extends Record<string, AnyTool>>(run: LedgerRun, tools: T): T {
  const wrapped: Record<string, AnyTool> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute as ((input: unknown, options: unknown) => unknown) | undefined;
    if (execute === undefined) {
      wrapped[name] = tool;
      continue;
    }
    wrapped[name] = {
      ...tool,
      execute: (input: unknown, options: unknown) => {
        if (typeof input !== "object" || input === null || Array.isArray(input)) {
          throw new InvalidArgumentError(`${name}: the model's input is not a JSON object`);
        }
        return run.call(name, input as Record<string, Json>, async () =>
          (await execute.call(tool, input, options)) as Json,
        );
      },
    };
  }
  return wrapped as T;
}
