"""Checks request bodies against the official SDKs' request types.

    python .ci/wire_check.py DIR

DIR holds the bodies tool-agent's HTTP models sent (the test `wire_bodies`
writes them with TOOL_AGENT_WIRE_BODIES=DIR): DIR/chat/*.json,
DIR/responses/*.json, DIR/anthropic/*.json. Each must validate against its
type, as PyPI `openai` and `anthropic` declare it (versions pinned in
.ci/wire-check-requirements.txt):

    chat       openai.types.chat.completion_create_params.CompletionCreateParamsStreaming
    responses  openai.types.responses.response_create_params.ResponseCreateParamsStreaming
    anthropic  anthropic.types.message_create_params.MessageCreateParamsStreaming

through pydantic, stricter than a TypeAdapter's defaults:

- strict mode (no coercion: a number is not a string, nor a string an object);
- no extra key in any TypedDict, at any depth (the SDKs' TypedDicts do not
  forbid them; we set `extra_behavior: forbid` on every `typed-dict` of the
  core schema);
- every `Iterable[...]` validated now (pydantic checks an Iterable's items
  lazily, when iterated, so `messages` would never be looked into; we
  validate them as lists);
- the SDKs' response models, which some param unions accept, take only
  instances in strict mode, never a JSON object.

Then negative cases, made from the bodies themselves, must be refused, each
at the place it was broken: an extra key at the top level and nested deep in
the conversation, and a wrong shape per provider (Anthropic's `tool_use.input`
as a string or an image of a media type it does not take, OpenAI's
`arguments` as an object, an image in a Chat tool message, a Responses
assistant message with `output_text` parts and no id). A negative case that passes fails the
check: it proves the check can fail.

Exits 1 on any failure.
"""

import copy
import json
import pathlib
import sys

from pydantic import TypeAdapter
from pydantic_core import SchemaValidator, ValidationError


def request_types():
    from anthropic.types.message_create_params import MessageCreateParamsStreaming
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    return {
        "chat": CompletionCreateParamsStreaming,
        "responses": ResponseCreateParamsStreaming,
        "anthropic": MessageCreateParamsStreaming,
    }


def tighten(node):
    """Every TypedDict of a core schema forbids extra keys; every Iterable is
    a list (validated now). Serializers and metadata are left alone."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "typed-dict":
            node["extra_behavior"] = "forbid"
            node["strict"] = True
        elif kind == "generator":
            node["type"] = "list"
        for key, value in node.items():
            if key not in ("serialization", "metadata"):
                tighten(value)
    elif isinstance(node, list):
        for value in node:
            tighten(value)
    return node


def validator(request_type):
    schema = copy.deepcopy(TypeAdapter(request_type).core_schema)
    return SchemaValidator(tighten(schema))


def errors_of(check, body):
    """The validation errors of `body` (JSON text in, as a server reads it),
    empty when it is valid."""
    try:
        check.validate_python(json.loads(json.dumps(body)), strict=True)
    except ValidationError as error:
        return error.errors()
    return []


def summary(errors, limit=8):
    """The deepest errors first: in a union, the member that came closest."""
    ordered = sorted(errors, key=lambda e: -len(e["loc"]))
    lines = [
        f"    {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in ordered[:limit]
    ]
    if len(errors) > limit:
        lines.append(f"    ... {len(errors) - limit} more (one per union member tried)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Negative cases: (name, the key the error must be at, mutate(body) -> bool),
# where mutate breaks a copy of a body in place and says whether the body
# had the place to break.


def conversation(body):
    return body.get("messages") or body.get("input") or []


def add_top_level_key(body):
    body["unexpected"] = True
    return True


def add_key_to_a_message(body):
    for item in conversation(body):
        if isinstance(item, dict):
            item["unexpected"] = True
            return True
    return False


def anthropic_block(kind):
    def find(body):
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == kind:
                        return block
        return None

    return find


def anthropic_extra_key_in_tool_result(body):
    block = anthropic_block("tool_result")(body)
    if block is None:
        return False
    block["unexpected"] = True
    return True


def anthropic_input_as_string(body):
    block = anthropic_block("tool_use")(body)
    if block is None:
        return False
    block["input"] = json.dumps(block["input"])[:-1]  # cut off, as a string
    return True


def anthropic_image_media_type(body):
    for message in body.get("messages", []):
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            for part in block.get("content") if isinstance(block.get("content"), list) else []:
                if part.get("type") == "image" and part["source"].get("type") == "base64":
                    part["source"]["media_type"] = "image/bmp"
                    return True
    return False


def chat_image_in_a_tool_message(body):
    image = None
    for message in body.get("messages", []):
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            if part.get("type") == "image_url":
                image = part
    if image is None:
        return False
    for message in body["messages"]:
        if message.get("role") == "tool":
            message["content"] = [image]
            return True
    return False


def chat_function(body):
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            return call["function"]
    return None


def chat_extra_key_in_function(body):
    function = chat_function(body)
    if function is None:
        return False
    function["unexpected"] = True
    return True


def chat_arguments_as_object(body):
    function = chat_function(body)
    if function is None:
        return False
    function["arguments"] = json.loads(function["arguments"])
    return True


def responses_item(kind):
    def find(body):
        for item in body.get("input", []):
            if item.get("type") == kind:
                return item
        return None

    return find


def responses_extra_key_in_function_call(body):
    item = responses_item("function_call")(body)
    if item is None:
        return False
    item["unexpected"] = True
    return True


def responses_arguments_as_object(body):
    item = responses_item("function_call")(body)
    if item is None:
        return False
    item["arguments"] = json.loads(item["arguments"])
    return True


def responses_output_text_without_id(body):
    item = responses_item("message")(body)
    if item is None or item.get("role") != "assistant":
        return False
    item["content"] = [{"type": "output_text", "text": str(item["content"]), "annotations": []}]
    return True


NEGATIVE = {
    "chat": [
        ("an extra top-level key", "unexpected", add_top_level_key),
        ("an extra key in a message", "unexpected", add_key_to_a_message),
        ("an extra key in a tool call's function", "unexpected", chat_extra_key_in_function),
        ("function.arguments as an object", "arguments", chat_arguments_as_object),
        ("an image_url part in a tool message", "type", chat_image_in_a_tool_message),
    ],
    "responses": [
        ("an extra top-level key", "unexpected", add_top_level_key),
        ("an extra key in an input item", "unexpected", add_key_to_a_message),
        ("an extra key in a function_call item", "unexpected", responses_extra_key_in_function_call),
        ("function_call.arguments as an object", "arguments", responses_arguments_as_object),
        ("an assistant message of output_text parts without an id", "id", responses_output_text_without_id),
    ],
    "anthropic": [
        ("an extra top-level key", "unexpected", add_top_level_key),
        ("an extra key in a message", "unexpected", add_key_to_a_message),
        ("an extra key in a tool_result block", "unexpected", anthropic_extra_key_in_tool_result),
        ("tool_use.input as a string", "input", anthropic_input_as_string),
        ("a tool_result image of media type image/bmp", "media_type", anthropic_image_media_type),
    ],
}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    failures = []
    for api, request_type in request_types().items():
        check = validator(request_type)
        files = sorted((root / api).glob("*.json"))
        if not files:
            failures.append(f"{api}: no request body in {root / api}")
            continue
        bodies = []
        for path in files:
            body = json.loads(path.read_text())
            bodies.append(body)
            errors = errors_of(check, body)
            if errors:
                failures.append(
                    f"{api}: {path} is refused by {request_type.__name__}:\n{summary(errors)}"
                )
        print(f"{api}: {len(files)} bodies checked against {request_type.__module__}.{request_type.__name__}")
        for name, key, mutate in NEGATIVE[api]:
            broken = None
            for body in bodies:
                candidate = copy.deepcopy(body)
                if mutate(candidate):
                    broken = candidate
                    break
            if broken is None:
                failures.append(f"{api}: no body has the place for the negative case {name!r}")
                continue
            errors = errors_of(check, broken)
            if not errors:
                failures.append(f"{api}: the negative case {name!r} passed the check")
            elif not any(e["loc"] and e["loc"][-1] == key for e in errors):
                failures.append(
                    f"{api}: the negative case {name!r} is refused, but not at {key!r}:\n{summary(errors)}"
                )
            else:
                print(f"{api}: refused, as it must be: {name}")
    if failures:
        print("\nwire check failed:", file=sys.stderr)
        for failure in failures:
            print(f"- {failure}", file=sys.stderr)
        return 1
    print("wire check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
