"""The demo crew (examples/crew.yaml) served as an A2A agent, and called by an A2A client.

Run it with ``python examples/serve_a2a.py``. It starts ``agentensemble serve-a2a
examples/crew.yaml --model scripted --port 0`` as a subprocess on 127.0.0.1, reads its agent
card, sends it a plain-text message (which fills the crew's one variable, ``topic``), then asks
it again through ``A2AAgent``, the tool an agent of another crew would use. See docs/serve.md.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState

from agentensemble.serve import A2AAgent

CREW = Path(__file__).with_name("crew.yaml")


def start() -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "agentensemble", "serve-a2a", str(CREW)]
    process = subprocess.Popen(
        [*command, "--model", "scripted", "--port", "0"], stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    line = process.stderr.readline().decode()  # "agentensemble A2A agent ... on http://..."
    found = re.search(r" on (http://\S+)", line)
    if found is None:
        process.kill()
        raise SystemExit(f"serve-a2a did not start: {line}")
    return process, found.group(1) + "/"


async def main(url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = await create_client(card, client_config=ClientConfig(httpx_client=http))
        print(f"Agent card: {card.name}; skills: {', '.join(s.id for s in card.skills)}")
        message = new_text_message("tides", role=Role.ROLE_USER)
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("status_update"):
                status = event.status_update.status
                said = status.message.parts[0].text if status.message.parts else ""
                print(f"  {TaskState.Name(status.state)}: {said}")
            if event.HasField("artifact_update"):
                print(f"Artifact: {event.artifact_update.artifact.parts[0].text}")
    answer = await A2AAgent(url, name="demo_crew").aexecute("volcanoes")
    print(f"Through A2AAgent: {answer.output}")


if __name__ == "__main__":
    server, address = start()
    try:
        asyncio.run(main(address))
    finally:
        server.terminate()
        server.wait(timeout=10)
