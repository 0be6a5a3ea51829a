"""A pyarrow filesystem that counts the calls lakeformat makes, by kind, and forwards them to a
real filesystem (local or S3): each call is at least one request on an object store."""
from __future__ import annotations

from collections import Counter

import pyarrow.fs as pafs


class CountingHandler(pafs.FileSystemHandler):
    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs
        self.calls: Counter = Counter()
        self.listed: list[str] = []   # directories listed, in order
        self.opened: list[str] = []   # files opened for reading, in order

    def _count(self, kind: str) -> None:
        self.calls[kind] += 1

    def get_type_name(self):
        return "counting+" + self.fs.type_name

    def normalize_path(self, path):
        return self.fs.normalize_path(path)

    def equals(self, other):
        return self is other

    def get_file_info(self, paths):
        self.calls["info"] += len(paths)
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        self._count("list")
        self.listed.append(selector.base_dir)
        return self.fs.get_file_info(selector)

    def create_dir(self, path, recursive):
        self._count("mkdir")
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        self._count("delete")
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self._count("delete")
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        self._count("delete")
        self.fs.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path):
        self._count("delete")
        self.fs.delete_file(path)

    def move(self, src, dest):
        self._count("move")
        self.fs.move(src, dest)

    def copy_file(self, src, dest):
        self._count("copy")
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path):
        self._count("read")
        self.opened.append(path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path):
        self._count("read")
        self.opened.append(path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path, metadata):
        self._count("write")
        return self.fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path, metadata):
        self._count("write")
        return self.fs.open_append_stream(path, metadata=metadata)


def counting(io) -> CountingHandler:
    """Wrap a FileIO's filesystem in place; returns the handler holding the counts."""
    handler = CountingHandler(io.fs)
    io.fs = pafs.PyFileSystem(handler)
    return handler
