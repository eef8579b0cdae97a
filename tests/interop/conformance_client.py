"""A tools client built on mcp_tasks' public API, for the MCP conformance suite's client scenarios.

The runner (``conformance client --command "PYTHON THIS_FILE" --scenario NAME``) starts a mock
server and runs this file with the server's URL as the last argument, and the environment:
``MCP_CONFORMANCE_SCENARIO`` (the scenario), ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (0.2.x runners
only; the revision the scenario runs at) and, for some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON,
e.g. the tool calls to make). The checks come from what the mock server saw.

It works for both runners unchanged: the client detects the era as any script's would
(``protocol="auto"``: ``server/discover`` for a 2026-07-28 server, else ``initialize``), so the 0.1.16
scenarios (2025-11-25 and older, no version in the environment) and the 0.2.x ones (2026-07-28) run
the same code. A version in the environment that this library does not speak is a usage error.

What it does is what a generic tools client does, with no knowledge of the checks: connect (the
server's capabilities, from ``server/discover`` or ``initialize``); ``tools/list`` (through
`Client.list_tools`); every tool called through `mcp_tasks.call_and_await` (a task, in either era,
is awaited), with the calls from the context when it names some, else with arguments made from
each tool's inputSchema; then
``resources/list`` + ``resources/read`` and ``prompts/list`` + ``prompts/get`` when the server
advertises those. Input requests are answered by a form handler that fills the requested schema.
A scenario that defines the client's part in its description has a plan below
(json-schema-2020-12-preservation: echo a schema).

In the auth/* scenarios the client's auth object is `mcp_tasks.OAuth` (see `oauth_for`): it is
given the context's pre-registered credentials when there are some, a Client ID Metadata Document
URL and redirect URI (used only where the authorization server asks for them), and an authorization
step that follows the authorization endpoint's redirect instead of opening a browser. A request
refused for want of authorization ends the run (a real client would not keep asking).

``MCP_TASKS_CONFORMANCE_REPORT`` (ours, optional) names a JSON file this writes at the end: what
was sent, which requests failed, and whether the run got to its end. Exit 0 when every request
that this client made succeeded; 1 otherwise; 2 for a usage error.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import mcp_tasks as mt

SPOKEN = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26")
TIMEOUT = 10.0


def log(message: str) -> None:
    """A line on stderr (the runner keeps it in stderr.txt)."""
    print(f"[mcp_tasks conformance client] {message}", file=sys.stderr, flush=True)


# -- values from JSON Schemas ----------------------------------------------------------------------


def local_schema(schema: Any, root: Mapping[str, Any]) -> Any:
    """`schema` with a same-document ``$ref`` followed; a network ``$ref`` is never fetched (None)."""
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 16:
        ref: str = schema["$ref"]
        if not ref.startswith("#/"):
            return None
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
        seen += 1
    return schema


def value_for(schema: Any, root: Mapping[str, Any], name: str = "value") -> Any:
    """A plausible value for a property schema: its default, const or first enum, else by type."""
    schema = local_schema(schema, root)
    if not isinstance(schema, Mapping):
        return "conformance"
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for choice_key in ("oneOf", "anyOf"):
        choices = schema.get(choice_key)
        if isinstance(choices, list) and choices:
            return value_for(choices[0], root, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "boolean":
        return True
    if kind == "integer":
        return 3
    if kind == "number":
        return 5
    if kind == "array":
        return []
    if kind == "object":
        return arguments_for(schema, root)
    if kind == "null":
        return None
    return "conformance"


def arguments_for(schema: Any, root: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Arguments for an object schema: every required property, plus those with a default."""
    if not isinstance(schema, Mapping):
        return {}
    root = root if root is not None else schema
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    arguments: dict[str, Any] = {}
    for name, prop in properties.items():
        resolved = local_schema(prop, root)
        if name in required or (isinstance(resolved, Mapping) and "default" in resolved):
            arguments[name] = value_for(prop, root, name)
    for name in required:
        arguments.setdefault(name, "conformance")
    return arguments


def prompt_arguments(prompt: Mapping[str, Any]) -> dict[str, str]:
    """Arguments for a prompt: a string for each required one."""
    declared = prompt.get("arguments")
    declared = declared if isinstance(declared, list) else []
    return {
        arg["name"]: "conformance"
        for arg in declared
        if isinstance(arg, Mapping) and isinstance(arg.get("name"), str) and arg.get("required")
    }


def fill_form(params: dict[str, Any]) -> dict[str, Any]:
    """The form handler: accept, with a value for every property of the requested schema."""
    schema = params.get("requestedSchema")
    content: dict[str, Any] = {}
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
        content = {name: value_for(prop, schema, name) for name, prop in schema["properties"].items()}
    log(f"form {params.get('message')!r} answered with {content}")
    return {"action": "accept", "content": content}


# -- the client ----------------------------------------------------------------------------------


class Refused(Exception):
    """Authorization failed: a client stops there (it would only ask again)."""


class Run:
    """One scenario run: the requests it made and the ones that failed."""

    def __init__(self, client: mt.Client, scenario: str, context: Mapping[str, Any]) -> None:
        self.client = client
        self.scenario = scenario
        self.context = context
        self.capabilities: dict[str, Any] = {"tools": {}}
        self.sent: list[str] = []
        self.failures: list[dict[str, Any]] = []

    def attempt(self, what: str, send: Callable[[], Any]) -> Any:
        """Send one request; a failure is logged and recorded, and the run goes on."""
        self.sent.append(what)
        try:
            answer = send()
        except mt.McpError as exc:
            log(f"{what} failed: {exc.code} {exc.kind} {exc} data={exc.data!r}")
            self.failures.append(
                {"request": what, "code": exc.code, "kind": exc.kind, "message": str(exc), "data": exc.data}
            )
            if exc.kind == "authorization":
                raise Refused(what) from exc
            return None
        log(f"{what} -> {json.dumps(answer, default=repr)[:300]}")
        return answer

    def listed(self, method: str, key: str) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list method."""
        cursor: str | None = None
        for _page in range(50):
            params = {"cursor": cursor} if cursor else {}
            page = self.attempt(method, functools.partial(self.client.request, method, params, timeout=TIMEOUT))
            if not isinstance(page, dict):
                return
            items = page.get(key)
            yield from (item for item in items if isinstance(item, dict)) if isinstance(items, list) else ()
            cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
            if not cursor:
                return

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool with the Tasks extension declared; a task is awaited."""
        return self.attempt(
            f"tools/call {name}",
            lambda: mt.call_and_await(self.client, name, arguments, call_opts={"timeout": TIMEOUT}, timeout=TIMEOUT),
        )

    def run(self) -> None:
        """The whole scenario."""
        # The first request detects the era (server/discover, else initialize); the capabilities
        # come from whichever answered.
        capabilities = self.attempt("connect", lambda: self.client.server_capabilities)
        if isinstance(capabilities, dict):
            self.capabilities = capabilities
        log(f"connected: {self.client.protocol_version} ({self.client.era})")
        if "tools" in self.capabilities:
            # list_tools() pages through tools/list and leaves out tools whose x-mcp-header
            # annotations a client must refuse.
            tools = self.attempt("tools/list", lambda: self.client.list_tools(timeout=TIMEOUT)) or []
            plan = PLANS.get(self.scenario, plan_calls)
            for name, arguments in plan(self, tools):
                self.call(name, arguments)
        if "resources" in self.capabilities:
            for resource in list(self.listed("resources/list", "resources")):
                uri = resource.get("uri")
                if isinstance(uri, str):
                    read = functools.partial(self.client.request, "resources/read", {"uri": uri}, timeout=TIMEOUT)
                    self.attempt(f"resources/read {uri}", read)
        if "prompts" in self.capabilities:
            for prompt in list(self.listed("prompts/list", "prompts")):
                prompt_name = prompt.get("name")
                if isinstance(prompt_name, str):
                    params = {"name": prompt_name, "arguments": prompt_arguments(prompt)}
                    get = functools.partial(self.client.request, "prompts/get", params, timeout=TIMEOUT)
                    self.attempt(f"prompts/get {prompt_name}", get)


Plan = Callable[[Run, list[dict[str, Any]]], list[tuple[str, dict[str, Any]]]]


def plan_calls(run: Run, tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The calls the context names, else every listed tool with arguments from its schema."""
    named = run.context.get("toolCalls")
    if isinstance(named, list):
        return [
            (call["name"], dict(call.get("arguments") or {}))
            for call in named
            if isinstance(call, dict) and isinstance(call.get("name"), str)
        ]
    return [
        (tool["name"], arguments_for(tool.get("inputSchema"))) for tool in tools if isinstance(tool.get("name"), str)
    ]


def plan_schema_echo(run: Run, tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """json-schema-2020-12-preservation: pass each other tool's inputSchema, as received, to
    json_schema_echo (the client's part as the scenario describes it)."""
    echo = "json_schema_echo"
    schemas = [tool.get("inputSchema") for tool in tools if tool.get("name") != echo]
    return [(echo, {"schema": schema}) for schema in schemas if isinstance(schema, dict)]


PLANS: dict[str, Plan] = {"json-schema-2020-12-preservation": plan_schema_echo}


# -- authorization (the auth/* scenarios) ---------------------------------------------------------

# The Client ID Metadata Document URL and redirect URI a conformance client presents (the suite's
# authorization servers accept them as they are; nothing is served there).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def follow_authorization(url: str) -> str:
    """The authorization step with no person: the suite's authorization endpoint answers at once
    with a redirect, which is followed instead of opening a browser."""
    import requests

    response = requests.get(url, allow_redirects=False, timeout=TIMEOUT)
    location = response.headers.get("Location")
    response.close()
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise mt.OAuthError(f"the authorization endpoint answered HTTP {response.status_code} without a redirect")
    return location


def oauth_for(scenario: str, context: Mapping[str, Any]) -> mt.OAuth | None:
    """The auth object for an auth/* scenario: pre-registered credentials from the context when it
    gives some; client credentials where the scenario is a backend's (auth/client-credentials-*)."""
    if not scenario.startswith("auth/"):
        return None
    client_id = context.get("client_id") if isinstance(context.get("client_id"), str) else None
    secret = context.get("client_secret") if isinstance(context.get("client_secret"), str) else None
    if scenario == "auth/client-credentials-jwt":  # private_key_jwt (SEP-1046)
        return mt.OAuth(
            client_id=client_id,
            private_key=str(context["private_key_pem"]),
            grant="client_credentials",
            timeout=TIMEOUT,
        )
    if scenario.startswith("auth/client-credentials"):
        return mt.OAuth(client_id=client_id, client_secret=secret, grant="client_credentials", timeout=TIMEOUT)
    if scenario == "auth/wif-jwt-bearer":  # workload identity federation (SEP-1933)
        return mt.OAuth(client_id=client_id, grant="jwt_bearer", assertion=str(context["valid_jwt"]), timeout=TIMEOUT)
    if scenario == "auth/enterprise-managed-authorization":  # SEP-990
        return mt.OAuth(
            client_id=client_id,
            client_secret=secret,
            grant="enterprise_managed",
            id_token=str(context["idp_id_token"]),
            idp_token_endpoint=str(context["idp_token_endpoint"]),
            idp_client_id=str(context["idp_client_id"]),
            timeout=TIMEOUT,
        )
    return mt.OAuth(
        client_id=client_id,
        client_secret=secret,
        client_metadata_url=CLIENT_METADATA_URL,
        redirect_uri=REDIRECT_URI,
        authorize=follow_authorization,
        timeout=TIMEOUT,
        dpop=scenario.startswith("auth/dpop"),  # SEP-1932
    )


def main(argv: list[str]) -> int:
    """Run the scenario against the URL given last; the exit code says whether all went well."""
    if not argv or not argv[-1].startswith(("http://", "https://")):
        log(f"usage: {sys.argv[0]} SERVER_URL (got {argv!r})")
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    report_path = os.environ.get("MCP_TASKS_CONFORMANCE_REPORT")
    log(f"scenario={scenario!r} protocol={version} url={url} context={context or None}")
    report: dict[str, Any] = {"scenario": scenario, "url": url, "finished": False}
    try:
        if version is not None and version not in SPOKEN:
            log(f"mcp_tasks speaks {', '.join(SPOKEN)}, not {version}")
            report["unsupportedVersion"] = version
            return 2
        handlers = mt.InputHandlers(form=fill_form)
        auth = oauth_for(scenario, context if isinstance(context, dict) else {})
        with mt.Client.http(url, input_handlers=handlers, timeout=TIMEOUT, auth=auth) as client:
            run = Run(client, scenario, context if isinstance(context, dict) else {})
            try:
                run.run()
            except Refused as refused:
                log(f"stopped: {refused} was not authorized")
            finally:
                report.update(sent=run.sent, failures=run.failures)
        report["finished"] = True
        return 1 if run.failures else 0
    finally:
        if report_path:
            with open(report_path, "w") as out:
                json.dump(report, out, indent=2, default=repr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
