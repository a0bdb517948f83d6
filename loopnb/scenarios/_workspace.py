"""The scenarios' small world: an in-memory workspace and the tools that read it.

Tools are made fresh for every engine (``make_*``), so a tool that counts its calls or a file
system a scenario changes never leaks from one run into the next.
"""

from __future__ import annotations

from collections.abc import Mapping

from loopnb.engine import Tool, ToolError, tool

FILES: Mapping[str, str] = {
    "src/main.rs": "fn main() {}",
    "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }",
    "README.md": "# hello\nA tiny Rust program: `cargo run` prints nothing.",
    "notes.txt": "Release checklist: bump the version, tag, push.",
    "server.log": "\n".join(
        [
            "09:00:01 INFO  server started on :8080",
            "09:00:07 INFO  GET /health 200",
            "09:01:13 WARN  slow query: 2.4s",
            "09:02:45 ERROR upstream timeout: payments",
            "09:02:46 INFO  retrying payments",
            "09:02:48 INFO  payments ok",
        ]
    ),
}
"""The workspace's files by path: what ``read_file`` returns and ``list_dir`` lists."""


def make_read_file(files: Mapping[str, str] = FILES) -> Tool:
    """``read_file(path)``: the spec's tool; a missing file is a soft error naming the path."""

    @tool
    def read_file(path: str) -> str:
        """Read a UTF-8 text file from the workspace."""
        if path not in files:
            raise ToolError(f"file {path} not found")
        return files[path]

    return read_file


def make_list_dir(files: Mapping[str, str] = FILES) -> Tool:
    """``list_dir(path)``: the files under a directory of the workspace."""

    @tool
    def list_dir(path: str) -> str:
        """List the files under a directory ("." for the top)."""
        prefix = "" if path in (".", "", "/") else path.rstrip("/") + "/"
        names = sorted(name for name in files if name.startswith(prefix))
        if not names:
            raise ToolError(f"directory {path} not found")
        return "\n".join(names)

    return list_dir
