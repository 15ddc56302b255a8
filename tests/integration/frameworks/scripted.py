"""A scripted OpenAI Agents SDK model: asks for one charge, then answers with its output."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from tests.integration.frameworks.downstream import Crash


class ScriptedModel(Model):
    """Asks for one charge; once the tool's output is in, answers (or the process crashes)."""

    def __init__(
        self, order_id: str, *, crash: bool, tool: str = "charge", amount_cents: int = 4200
    ) -> None:
        self.order_id, self.crash = order_id, crash
        self.tool, self.amount_cents = tool, amount_cents

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem],
        *args: Any, **kwargs: Any,
    ) -> ModelResponse:  # fmt: skip
        items: list[Any] = list(input)
        outputs = [
            i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if not outputs:
            args_json = json.dumps({"order_id": self.order_id, "amount_cents": self.amount_cents})
            call = ResponseFunctionToolCall(
                type="function_call", call_id="call-1", name=self.tool, arguments=args_json
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        if self.crash:
            raise Crash("the process dies before the model's next turn")
        text = ResponseOutputText(
            type="output_text", text=f"charged: {outputs[-1]['output']}", annotations=[]
        )
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError
