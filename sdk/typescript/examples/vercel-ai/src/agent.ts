// A Vercel AI SDK agent whose tools run through oncelog: a crash and a rerun replay the
// recorded call instead of charging twice; a rerun with another argument is a conflict.
import { LedgerClient, LedgerRun, ledgerTools } from "@oncelog/sdk";
import { type LanguageModel, generateText, stepCountIs, tool } from "ai";
import { z } from "zod";

/** The downstream: what it saw, keyed by the idempotency key it was handed. */
export class PaymentProvider {
  readonly charges: { order: string; amountCents: number }[] = [];

  charge(order: string, amountCents: number): { chargeId: string } {
    this.charges.push({ order, amountCents });
    return { chargeId: `ch_${order}_${this.charges.length}` };
  }
}

/** One run of the agent on `channelId`: the model decides, the ledger keeps the calls. */
export async function runAgent(
  client: LedgerClient,
  channelId: string,
  model: LanguageModel,
  provider: PaymentProvider,
) {
  const run = new LedgerRun(client, channelId);
  const tools = ledgerTools(run, {
    charge: tool({
      description: "Charge the customer for an order",
      inputSchema: z.object({ order: z.string(), amountCents: z.number().int() }),
      execute: async ({ order, amountCents }) => provider.charge(order, amountCents),
    }),
  });
  return generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "Charge order A1." });
}
