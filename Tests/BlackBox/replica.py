"""A table replica that applies `update` messages exactly as web-client-protocol/README.md describes."""
import copy


class Replica:
    def __init__(self, snapshot):
        self.version = snapshot["version"]
        self.sections = copy.deepcopy(snapshot["sections"])

    def apply(self, update):
        assert update["version"] == self.version + 1, f"gap or duplicate: at {self.version}, got {update['version']}"
        sections = self.sections
        # 1. Reloads at their old index paths.
        for entry in update["reloadSections"]:
            sections[entry["at"]]["header"] = entry["header"]
            sections[entry["at"]]["footer"] = entry["footer"]
        for entry in update["reloadRows"]:
            s, r = entry["at"]
            sections[s]["rows"][r]["value"] = entry["value"]
            for flag in ("editable", "movable"):
                if flag in entry:
                    if entry[flag]:
                        sections[s]["rows"][r].pop(flag, None)
                    else:
                        sections[s]["rows"][r][flag] = False
        # 2. Take out rows (old index paths, descending), then sections (descending).
        moved_rows = {}
        removals = [(tuple(p), None) for p in update["deleteRows"]]
        removals += [(tuple(m["from"]), tuple(m["to"])) for m in update["moveRows"]]
        for (s, r), destination in sorted(removals, reverse=True):
            row = sections[s]["rows"].pop(r)
            if destination is not None:
                moved_rows[destination] = row
        moved_sections = {}
        section_removals = [(s, None) for s in update["deleteSections"]]
        section_removals += [(m["from"], m["to"]) for m in update["moveSections"]]
        for s, destination in sorted(section_removals, reverse=True):
            section = sections.pop(s)
            if destination is not None:
                moved_sections[destination] = section
        # 3. Put back sections, then rows, ascending by destination.
        arrivals = {e["at"]: copy.deepcopy(e["section"]) for e in update["insertSections"]}
        arrivals.update(moved_sections)
        for s in sorted(arrivals):
            sections.insert(s, arrivals[s])
        row_arrivals = {tuple(e["at"]): copy.deepcopy(e["row"]) for e in update["insertRows"]}
        row_arrivals.update(moved_rows)
        for s, r in sorted(row_arrivals):
            sections[s]["rows"].insert(r, row_arrivals[(s, r)])
        self.version = update["version"]

    def values(self):
        return [[row["value"] for row in section["rows"]] for section in self.sections]
