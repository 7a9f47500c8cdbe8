"""Drives `iesr mcp` with the official MCP Python SDK over stdio.

Usage: mcp_client.py IESR DB MODEL. Prints one JSON object: the tools the
server lists and, for each call made, whether it was an error and its text.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CALLS = [
    ("list_databases", {}),
    ("describe_schema", {"db": "concert"}),
    ("run_sql", {"db": "concert", "sql": "SELECT name FROM singer ORDER BY name", "max_rows": 2}),
    ("run_sql", {"db": "concert", "sql": "DELETE FROM singer"}),
    ("describe_schema", {"db": "nope"}),
    ("ask", {"db": "concert", "question": "How many singers do we have?"}),
]


async def main(iesr, db, model):
    server = StdioServerParameters(
        command=iesr,
        args=["mcp", "--db", f"concert={db}", "--method", "greedy", "--model", model],
    )
    report = {"calls": []}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
            listed = await session.list_tools()
            report["tools"] = sorted(tool.name for tool in listed.tools)
            for name, arguments in CALLS:
                result = await session.call_tool(name, arguments)
                report["calls"].append({
                    "tool": name,
                    "is_error": bool(result.is_error),
                    "text": result.content[0].text,
                })
    print(json.dumps(report))


asyncio.run(main(*sys.argv[1:4]))
