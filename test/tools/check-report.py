"""Checks a kilnc --report page as Chromium rendered it (--dump-dom) against the
--log-device-placement lines of the same compile: every logged node is listed
once with its device and drawn once in the graph, and the partition table has
one row per device.

usage: check-report.py PLACEMENT_LOG DOM_HTML
"""
import html.parser
import sys


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell = [], None, None
        self.table, self.drawn, self.partitions = None, [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.table = attrs.get("id")
        elif tag == "tr":
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = ""
        elif tag == "g" and attrs.get("class") == "node":
            self.drawn.append(attrs.get("data-device"))

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(self.cell)
            self.cell = None
        elif tag == "tr" and self.row:
            if self.table == "nodes":
                self.rows.append(self.row)
            elif self.table == "partitions":
                self.partitions += 1
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def main():
    logged = []
    for line in open(sys.argv[1], encoding="utf-8"):
        name, sep, device = line.rstrip("\n").rpartition(": /job:")
        if sep:
            logged.append((name, "/job:" + device))
    page = Page()
    page.feed(open(sys.argv[2], encoding="utf-8").read())
    listed = {(row[0], row[2]) for row in page.rows}
    missing = [entry for entry in logged if entry not in listed]
    if not logged or missing:
        sys.exit(f"error: {len(missing)} of {len(logged)} logged nodes are not listed: {missing[:5]}")
    if len(page.drawn) != len(page.rows):
        sys.exit(f"error: {len(page.drawn)} nodes drawn, {len(page.rows)} listed")
    devices = {device for _, device in logged}
    if page.partitions != len(devices):
        sys.exit(f"error: {page.partitions} partition rows for {len(devices)} devices")
    print(f"report lists all {len(logged)} logged nodes, draws {len(page.drawn)}, "
          f"{page.partitions} partitions")


main()
