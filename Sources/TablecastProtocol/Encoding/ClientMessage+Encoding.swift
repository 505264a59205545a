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
        case .refreshToken(let token):
            members = ["type": "refreshToken", "token": .string(token)]
        case .createTable(let table, let sections, let rules):
            members = ["type": "createTable", "table": .string(table)]
            if !sections.isEmpty { members["sections"] = .array(sections.map { .object(Self.newSection($0)) }) }
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
        case .history(let table, let from, let to, let limit, let newestFirst):
            members = ["type": "history", "table": .string(table), "order": newestFirst ? "newest" : "oldest"]
            members["from"] = from.map { .number(Double($0)) }
            members["to"] = to.map { .number(Double($0)) }
            members["limit"] = limit.map { .number(Double($0)) }
        case .snapshotAt(let table, let version):
            members = ["type": "snapshotAt", "table": .string(table), "version": .number(Double(version))]
        }
        members["ref"] = ref.map(JSONValue.string)
        return .object(members)
    }

    /// The message's text as UTF-8 bytes, ready to send: `json.jsonBytes`, written straight from the message for
    /// row intents (see ``directlyEncoded()``).
    public var encoded: [UInt8] { directlyEncoded() ?? json.jsonBytes }

    /// A single-change intent's members are those of the one entry of its batch list (as in decoding); a batch
    /// has its non-empty lists.
    private static func intentMembers(_ intent: Intent) -> [String: JSONValue] {
        let lists = entries(intent.clientBatch)
        guard case .batch = intent else { return lists.first { !$0.entries.isEmpty }?.entries.first ?? [:] }
        var members: [String: JSONValue] = [:]
        for (list, entries) in lists where !entries.isEmpty {
            members[list.rawValue] = .array(entries.map(JSONValue.object))
        }
        return members
    }

    /// Each list's entries as members, in ``BatchList`` order.
    private static func entries(_ batch: ClientBatch) -> [(list: BatchList, entries: [[String: JSONValue]])] {
        [
            (.deleteSections, batch.deleteSections.map { sectionRef($0, "at") }),
            (
                .insertSections,
                batch.insertSections.map { entry in
                    var section = newSection(entry.section)
                    section["at"] = .number(Double(entry.at))
                    return section
                }
            ),
            (
                .reloadSections,
                batch.reloadSections.map { entry in
                    var section = sectionRef(entry.section, "at")
                    if let header = entry.header { section["header"] = header.map(JSONValue.string) ?? .null }
                    if let footer = entry.footer { section["footer"] = footer.map(JSONValue.string) ?? .null }
                    section["rows"] = entry.rows.map { .array($0.map { .object(newRow($0)) }) }
                    return section
                }
            ),
            (
                .moveSections,
                batch.moveSections.map { entry in
                    var section = sectionRef(entry.from, "from")
                    section["to"] = .number(Double(entry.to))
                    return section
                }
            ),
            (.deleteRows, batch.deleteRows.map { rowRef($0, "at") }),
            (
                .insertRows,
                batch.insertRows.map { entry in
                    var row = newRow(entry.row)
                    row["at"] = entry.at.json
                    return row
                }
            ),
            (
                .reloadRows,
                batch.reloadRows.map { entry in
                    var row = rowRef(entry.row, "at")
                    row["value"] = entry.value
                    row["editable"] = entry.editable.map(JSONValue.bool)
                    row["movable"] = entry.movable.map(JSONValue.bool)
                    row["editingStyle"] = entry.editingStyle.map { .string($0.rawValue) }
                    return row
                }
            ),
            (
                .moveRows,
                batch.moveRows.map { entry in
                    var row = rowRef(entry.from, "from")
                    row["to"] = entry.to.json
                    return row
                }
            ),
            (
                .patchRows,
                batch.patchRows.map { entry in
                    var row = rowRef(entry.row, "at")
                    row["patch"] = entry.patch
                    return row
                }
            ),
        ]
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

    /// A new row: `{value, editable?, movable?, editingStyle?}` with a flag only when it is not its default.
    private static func newRow(_ row: RowContent) -> [String: JSONValue] {
        var members: [String: JSONValue] = ["value": row.value]
        if !row.editable { members["editable"] = false }
        if !row.movable { members["movable"] = false }
        if row.editingStyle != .delete { members["editingStyle"] = .string(row.editingStyle.rawValue) }
        return members
    }

    /// A new section: `{header?, footer?, rows?}`.
    private static func newSection(_ section: SectionContent) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        members["header"] = section.header.map(JSONValue.string)
        members["footer"] = section.footer.map(JSONValue.string)
        if !section.rows.isEmpty { members["rows"] = .array(section.rows.map { .object(newRow($0)) }) }
        return members
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
