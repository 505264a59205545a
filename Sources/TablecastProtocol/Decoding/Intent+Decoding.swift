import TableModel

extension ClientMessage {
    /// The edit intents: a single change, or a `batch` of eight lists.
    static func intent(type: String, fields: FieldReader, limits: ProtocolLimits) throws(ProtocolError) -> Intent {
        switch type {
        case "insert":
            return .insert(at: try fields.rowPath("at"), row: try rowContent(fields, context: type))
        case "delete":
            return .delete(try rowRef(fields, "at"))
        case "move":
            return .move(from: try rowRef(fields, "from"), to: try fields.rowPath("to"))
        case "edit":
            return .edit(
                try rowRef(fields, "at"), value: try fields.value("value"), editable: try fields.optionalBool("editable"),
                movable: try fields.optionalBool("movable"), editingStyle: try editingStyle(fields))
        case "insertSection":
            return .insertSection(at: try fields.index("at"), section: try sectionContent(fields, context: type))
        case "deleteSection":
            return .deleteSection(try sectionRef(fields, "at"))
        case "moveSection":
            return .moveSection(from: try sectionRef(fields, "from"), to: try fields.index("to"))
        case "editSection":
            return .editSection(
                try sectionRef(fields, "at"), header: try fields.nullableString("header"),
                footer: try fields.nullableString("footer"))
        default:
            return .batch(try batch(fields, limits: limits))
        }
    }

    private static func batch(_ fields: FieldReader, limits: ProtocolLimits) throws(ProtocolError) -> ClientBatch {
        let names = [
            "deleteSections", "insertSections", "reloadSections", "moveSections", "deleteRows", "insertRows",
            "reloadRows", "moveRows",
        ]
        var lists: [String: [JSONValue]] = [:]
        for name in names { lists[name] = try fields.optionalArray(name) ?? [] }
        // Count before decoding anything, so an oversized batch costs no more than its parse.
        var entries = lists.values.reduce(0) { $0 + $1.count }
        for section in lists["insertSections"]! {
            if case .object(let members) = section, case .array(let rows)? = members["rows"] { entries += rows.count }
        }
        guard entries <= limits.maxBatchEntries else {
            throw ProtocolError(
                .limitExceeded, "batch has \(entries) entries; the limit is \(limits.maxBatchEntries)", at: "batch")
        }
        func each<T>(_ name: String, _ decode: (FieldReader) throws(ProtocolError) -> T) throws(ProtocolError) -> [T] {
            var result: [T] = []
            for (index, element) in lists[name]!.enumerated() {
                result.append(try decode(try FieldReader(element, context: "\(name)[\(index)]")))
            }
            return result
        }
        return ClientBatch(
            deleteSections: try each("deleteSections") { (entry) throws(ProtocolError) in try sectionRef(entry, "at") },
            insertSections: try each("insertSections") { (entry) throws(ProtocolError) in
                .init(at: try entry.index("at"), section: try sectionContent(entry, context: entry.context))
            },
            reloadSections: try each("reloadSections") { (entry) throws(ProtocolError) in
                .init(
                    section: try sectionRef(entry, "at"), header: try entry.nullableString("header"),
                    footer: try entry.nullableString("footer"))
            },
            moveSections: try each("moveSections") { (entry) throws(ProtocolError) in
                .init(from: try sectionRef(entry, "from"), to: try entry.index("to"))
            },
            deleteRows: try each("deleteRows") { (entry) throws(ProtocolError) in try rowRef(entry, "at") },
            insertRows: try each("insertRows") { (entry) throws(ProtocolError) in
                .init(at: try entry.rowPath("at"), row: try rowContent(entry, context: entry.context))
            },
            reloadRows: try each("reloadRows") { (entry) throws(ProtocolError) in
                .init(
                    row: try rowRef(entry, "at"), value: try entry.value("value"),
                    editable: try entry.optionalBool("editable"), movable: try entry.optionalBool("movable"),
                    editingStyle: try editingStyle(entry))
            },
            moveRows: try each("moveRows") { (entry) throws(ProtocolError) in
                .init(from: try rowRef(entry, "from"), to: try entry.rowPath("to"))
            })
    }

    private static func rowRef(_ fields: FieldReader, _ key: String) throws(ProtocolError) -> RowRef {
        RowRef(try fields.rowPath(key), id: try fields.optionalString("row"))
    }

    private static func sectionRef(_ fields: FieldReader, _ key: String) throws(ProtocolError) -> SectionRef {
        SectionRef(try fields.index(key), id: try fields.optionalString("section"))
    }

    static func rowContent(_ fields: FieldReader, context: String) throws(ProtocolError) -> RowContent {
        RowContent(
            value: try fields.value("value"), editable: try fields.optionalBool("editable") ?? true,
            movable: try fields.optionalBool("movable") ?? true, editingStyle: try editingStyle(fields) ?? .delete)
    }

    /// The optional `editingStyle` field: `"delete"`, `"insert"` or `"none"`.
    private static func editingStyle(_ fields: FieldReader) throws(ProtocolError) -> EditingStyle? {
        guard let name = try fields.optionalString("editingStyle") else { return nil }
        guard let style = EditingStyle(rawValue: name) else {
            throw fields.failure("editingStyle", "one of \"delete\", \"insert\", \"none\"")
        }
        return style
    }

    static func sectionContent(_ fields: FieldReader, context: String) throws(ProtocolError) -> SectionContent {
        let rows = try (fields.optionalArray("rows") ?? []).enumerated().map { (index, element) throws(ProtocolError) in
            try rowContent(try FieldReader(element, context: "\(context).rows[\(index)]"), context: context)
        }
        return SectionContent(
            header: try fields.nullableString("header") ?? nil, footer: try fields.nullableString("footer") ?? nil,
            rows: rows)
    }
}
