import TableModel

extension ClientMessage {
    /// The message as a JSON value, in the shapes web-client-protocol/ specifies (the inverse of ``decode(_:limits:)``).
    /// Optional fields are left out when absent; row flags are written only when they differ from the default.
    public var json: JSONValue {
        var members: [String: JSONValue]
        switch body {
        case .hello(let client, let name, let token):
            members = ["type": "hello", "client": .string(client)]
            members["name"] = name.map(JSONValue.string)
            members["token"] = token.map(JSONValue.string)
        case .createTable(let table, let sections, let rules):
            members = ["type": "createTable", "table": .string(table)]
            if !sections.isEmpty { members["sections"] = .array(sections.map(Self.newSection)) }
            if rules != RulesPatch() { members["rules"] = rules.json }
        case .dropTable(let table):
            members = ["type": "dropTable", "table": .string(table)]
        case .setRules(let table, let rules):
            members = ["type": "setRules", "table": .string(table), "rules": rules.json]
        case .listTables:
            members = ["type": "listTables"]
        case .subscribe(let table, let since, let epoch), .refresh(let table, let since, let epoch):
            if case .subscribe = body { members = ["type": "subscribe"] } else { members = ["type": "refresh"] }
            members["table"] = .string(table)
            members["since"] = since.map { .number(Double($0)) }
            members["epoch"] = epoch.map(JSONValue.string)
        case .unsubscribe(let table):
            members = ["type": "unsubscribe", "table": .string(table)]
        case .intent(let table, let base, let intent):
            members = Self.intentMembers(intent)
            members["type"] = .string(intent.name)
            members["table"] = .string(table)
            members["base"] = base.map { .number(Double($0)) }
        case .editing(let table, let on):
            members = ["type": "editing", "table": .string(table), "on": .bool(on)]
        case .beginEditingRow(let table, let row):
            members = ["type": "beginEditingRow", "table": .string(table), "row": .string(row)]
        case .endEditingRow(let table, let row):
            members = ["type": "endEditingRow", "table": .string(table), "row": .string(row)]
        }
        members["ref"] = ref.map(JSONValue.string)
        return .object(members)
    }

    /// The message's text as UTF-8 bytes, ready to send.
    public var encoded: [UInt8] { json.jsonBytes }

    private static func intentMembers(_ intent: Intent) -> [String: JSONValue] {
        switch intent {
        case .insert(let at, let row):
            var members = newRow(row)
            members["at"] = at.json
            return members
        case .delete(let row):
            return rowRef(row, "at")
        case .move(let from, let to):
            var members = rowRef(from, "from")
            members["to"] = to.json
            return members
        case .edit(let row, let value, let editable, let movable):
            var members = rowRef(row, "at")
            members["value"] = value
            members["editable"] = editable.map(JSONValue.bool)
            members["movable"] = movable.map(JSONValue.bool)
            return members
        case .insertSection(let at, let section):
            guard case .object(var members) = newSection(section) else { return [:] }
            members["at"] = .number(Double(at))
            return members
        case .deleteSection(let section):
            return sectionRef(section, "at")
        case .moveSection(let from, let to):
            var members = sectionRef(from, "from")
            members["to"] = .number(Double(to))
            return members
        case .editSection(let section, let header, let footer):
            var members = sectionRef(section, "at")
            if let header { members["header"] = header.map(JSONValue.string) ?? .null }
            if let footer { members["footer"] = footer.map(JSONValue.string) ?? .null }
            return members
        case .batch(let batch):
            return batchMembers(batch)
        }
    }

    private static func batchMembers(_ batch: ClientBatch) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        func list(_ name: String, _ entries: [JSONValue]) {
            if !entries.isEmpty { members[name] = .array(entries) }
        }
        list("deleteSections", batch.deleteSections.map { .object(sectionRef($0, "at")) })
        list(
            "insertSections",
            batch.insertSections.map { entry in
                guard case .object(var section) = newSection(entry.section) else { return .null }
                section["at"] = .number(Double(entry.at))
                return .object(section)
            })
        list(
            "reloadSections",
            batch.reloadSections.map { entry in
                var section = sectionRef(entry.section, "at")
                if let header = entry.header { section["header"] = header.map(JSONValue.string) ?? .null }
                if let footer = entry.footer { section["footer"] = footer.map(JSONValue.string) ?? .null }
                return .object(section)
            })
        list(
            "moveSections",
            batch.moveSections.map { entry in
                var section = sectionRef(entry.from, "from")
                section["to"] = .number(Double(entry.to))
                return .object(section)
            })
        list("deleteRows", batch.deleteRows.map { .object(rowRef($0, "at")) })
        list(
            "insertRows",
            batch.insertRows.map { entry in
                var row = newRow(entry.row)
                row["at"] = entry.at.json
                return .object(row)
            })
        list(
            "reloadRows",
            batch.reloadRows.map { entry in
                var row = rowRef(entry.row, "at")
                row["value"] = entry.value
                row["editable"] = entry.editable.map(JSONValue.bool)
                row["movable"] = entry.movable.map(JSONValue.bool)
                return .object(row)
            })
        list(
            "moveRows",
            batch.moveRows.map { entry in
                var row = rowRef(entry.from, "from")
                row["to"] = entry.to.json
                return .object(row)
            })
        return members
    }

    private static func rowRef(_ ref: RowRef, _ key: String) -> [String: JSONValue] {
        var members: [String: JSONValue] = [key: ref.path.json]
        members["row"] = ref.id.map(JSONValue.string)
        return members
    }

    private static func sectionRef(_ ref: SectionRef, _ key: String) -> [String: JSONValue] {
        var members: [String: JSONValue] = [key: .number(Double(ref.index))]
        members["section"] = ref.id.map(JSONValue.string)
        return members
    }

    /// A new row: `{value, editable?, movable?}` with a flag only when it is `false`.
    private static func newRow(_ row: RowContent) -> [String: JSONValue] {
        var members: [String: JSONValue] = ["value": row.value]
        if !row.editable { members["editable"] = false }
        if !row.movable { members["movable"] = false }
        return members
    }

    /// A new section: `{header?, footer?, rows?}`.
    private static func newSection(_ section: SectionContent) -> JSONValue {
        var members: [String: JSONValue] = [:]
        members["header"] = section.header.map(JSONValue.string)
        members["footer"] = section.footer.map(JSONValue.string)
        if !section.rows.isEmpty { members["rows"] = .array(section.rows.map { .object(newRow($0)) }) }
        return .object(members)
    }
}

extension RulesPatch {
    /// The fields this patch gives, as a `rules` object.
    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        members["moves"] = moves.map { .string($0.rawValue) }
        members["reserveLastRow"] = reserveLastRow.map(JSONValue.bool)
        members["deleteConfirmationTitle"] = deleteConfirmationTitle.map(JSONValue.string)
        members["maxSections"] = maxSections.map { .number(Double($0)) }
        members["maxRowsPerSection"] = maxRowsPerSection.map { .number(Double($0)) }
        members["maxValueBytes"] = maxValueBytes.map { .number(Double($0)) }
        return .object(members)
    }
}
