import TableModel

extension ClientMessage {
    /// The single-change intents by wire name, each the one entry of a batch list: they share the entry's
    /// members and its decoding.
    static let singleChangeIntents: [String: BatchList] = [
        "insert": .insertRows, "delete": .deleteRows, "move": .moveRows, "edit": .reloadRows,
        "insertSection": .insertSections, "deleteSection": .deleteSections, "moveSection": .moveSections,
        "editSection": .reloadSections, "patch": .patchRows,
    ]

    /// The wire names of every edit intent: the single-change ones and `batch`.
    package static let intentTypes = Set(singleChangeIntents.keys).union(["batch"])

    /// The members of a batch entry of each list.
    static let entryKeys: [BatchList: Set<String>] = [
        .deleteSections: ["at", "section"],
        .insertSections: SectionContent.jsonKeys.union(["at"]),
        .reloadSections: ["at", "section", "header", "footer", "rows"],
        .moveSections: ["from", "to", "section"],
        .deleteRows: ["at", "row"],
        .insertRows: RowContent.jsonKeys.union(["at"]),
        .reloadRows: ["at", "row", "value", "editable", "movable", "editingStyle"],
        .moveRows: ["from", "to", "row"],
        .patchRows: ["at", "row", "patch"],
    ]

    /// The edit intents: a single change, or a `batch` of its lists.
    static func intent(type: String, fields: JSONObjectReader, limits: ProtocolLimits) throws -> Intent {
        guard let list = singleChangeIntents[type] else { return .batch(try batch(fields, limits: limits)) }
        var batch = ClientBatch()
        try append(list, fields, to: &batch)
        return singleChange(batch)
    }

    private static func batch(_ fields: JSONObjectReader, limits: ProtocolLimits) throws -> ClientBatch {
        var lists: [(BatchList, [JSONValue])] = []
        for list in BatchList.allCases {
            // Read as JSONDecode.array would, with its error, without building a path for each element.
            guard let value = fields[list.rawValue] else { continue }
            guard case .array(let elements) = value else {
                throw JSONDecode.mismatch("an array", value, fields.path(list.rawValue))
            }
            lists.append((list, elements))
        }
        // Count before decoding anything, so an oversized batch costs no more than its parse.
        var entries = lists.reduce(0) { $0 + $1.1.count }
        // Inserted and reloaded sections carry rows, each of which counts as an entry.
        for (list, sections) in lists where list == .insertSections || list == .reloadSections {
            for section in sections {
                if case .object(let members) = section, case .array(let rows)? = members["rows"] {
                    entries += rows.count
                }
            }
        }
        guard entries <= limits.maxBatchEntries else {
            throw ProtocolError(
                .limitExceeded, "batch has \(entries) entries; the limit is \(limits.maxBatchEntries)", at: "batch")
        }
        var batch = ClientBatch()
        for (list, elements) in lists {
            let keys = entryKeys[list]!
            for (index, element) in elements.enumerated() {
                let entry = try JSONObjectReader(element, path: "\(list.rawValue)[\(index)]", allowing: keys)
                try append(list, entry, to: &batch)
            }
        }
        return batch
    }

    /// Decodes one entry of `list` (a batch entry, or a single-change intent's members) and appends it to `batch`.
    private static func append(_ list: BatchList, _ entry: JSONObjectReader, to batch: inout ClientBatch)
        throws(JSONDecodingError)
    {
        switch list {
        case .deleteSections:
            batch.deleteSections.append(try sectionRef(entry, "at"))
        case .insertSections:
            batch.insertSections.append(
                .init(at: try entry.required("at", JSONDecode.count), section: try SectionContent(reading: entry)))
        case .reloadSections:
            batch.reloadSections.append(
                .init(
                    section: try sectionRef(entry, "at"),
                    header: try entry.optional("header", JSONDecode.nullableString),
                    footer: try entry.optional("footer", JSONDecode.nullableString),
                    rows: try entry.optional(
                        "rows",
                        JSONDecode.array { (value, path) throws(JSONDecodingError) in
                            try RowContent(json: value, path: path)
                        })))
        case .moveSections:
            batch.moveSections.append(
                .init(from: try sectionRef(entry, "from"), to: try entry.required("to", JSONDecode.count)))
        case .deleteRows:
            batch.deleteRows.append(try rowRef(entry, "at"))
        case .insertRows:
            batch.insertRows.append(
                .init(at: try entry.required("at", JSONDecode.rowPath), row: try RowContent(reading: entry)))
        case .reloadRows:
            batch.reloadRows.append(
                .init(
                    row: try rowRef(entry, "at"), value: try entry.required("value", JSONDecode.any),
                    editable: try entry.optional("editable", JSONDecode.bool),
                    movable: try entry.optional("movable", JSONDecode.bool),
                    editingStyle: try entry.optional("editingStyle", JSONDecode.editingStyle)))
        case .moveRows:
            batch.moveRows.append(
                .init(from: try rowRef(entry, "from"), to: try entry.required("to", JSONDecode.rowPath)))
        case .patchRows:
            batch.patchRows.append(
                .init(row: try rowRef(entry, "at"), patch: try entry.required("patch", JSONDecode.any)))
        }
    }

    /// The single-change intent whose one entry `batch` holds (see ``Intent/clientBatch``).
    private static func singleChange(_ batch: ClientBatch) -> Intent {
        if let entry = batch.insertRows.first { return .insert(at: entry.at, row: entry.row) }
        if let entry = batch.deleteRows.first { return .delete(entry) }
        if let entry = batch.moveRows.first { return .move(from: entry.from, to: entry.to) }
        if let entry = batch.reloadRows.first {
            return .edit(
                entry.row, value: entry.value, editable: entry.editable, movable: entry.movable,
                editingStyle: entry.editingStyle)
        }
        if let entry = batch.patchRows.first { return .patch(entry.row, patch: entry.patch) }
        if let entry = batch.insertSections.first { return .insertSection(at: entry.at, section: entry.section) }
        if let entry = batch.deleteSections.first { return .deleteSection(entry) }
        if let entry = batch.moveSections.first { return .moveSection(from: entry.from, to: entry.to) }
        if let entry = batch.reloadSections.first {
            return .editSection(entry.section, header: entry.header, footer: entry.footer, rows: entry.rows)
        }
        preconditionFailure("append(_:_:to:) adds one entry")
    }

    private static func rowRef(_ fields: JSONObjectReader, _ key: String) throws(JSONDecodingError) -> RowRef {
        RowRef(try fields.required(key, JSONDecode.rowPath), id: try fields.optional("row", JSONDecode.string))
    }

    private static func sectionRef(_ fields: JSONObjectReader, _ key: String) throws(JSONDecodingError) -> SectionRef {
        SectionRef(try fields.required(key, JSONDecode.count), id: try fields.optional("section", JSONDecode.string))
    }
}
