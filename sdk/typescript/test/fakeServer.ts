// A fetch that answers the write API's routes from canned JSON and keeps each request's
// headers: for the tests of what a call sends, without a server.
export interface Sent {
  url: string;
  headers: Headers;
  body: string;
}

export const TOKEN = "4f1c2a9e8b7d6c5e4f3a2b1c0d9e8f7a";

const EXECUTION = {
  id: "op-1",
  channel_id: "run-1",
  key_name: "charge:1",
  tool_name: "charge",
  params: {},
  request_hash: "h",
  idempotency_key: "idem-1",
  epoch: 1,
  status: "claimed",
  worker_id: "w",
  lease_deadline_ms: 0,
  cancel_requested: false,
};

/** The answer of a route; a 409 conflict for a claim of key `conflict`, a 404 for a get of
 * key `absent`. */
function answerTo(url: string, body: string): [number, unknown] {
  if (url.endsWith("/v1/claims")) {
    if (body.includes('"key_name":"conflict"')) {
      return [409, { status: 409, code: "conflict", message: "another request", detail: "" }];
    }
    return [200, { status: "claimed", execution: EXECUTION, claim_token: TOKEN }];
  }
  if (url.includes("key_name=absent")) {
    return [404, { status: 404, code: "not_found", message: "absent", detail: "absent" }];
  }
  return [200, { ...EXECUTION, status: "completed", result: 1 }];
}

/** A fetch that records what it was sent in `sent`. */
export function fakeServer(sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const url = String(input);
    const body = String(init?.body ?? "");
    sent.push({ url, headers: new Headers(init?.headers), body });
    const [status, answer] = answerTo(url, body);
    return new Response(JSON.stringify(answer), {
      status,
      headers: { "content-type": "application/json" },
    });
  };
}
