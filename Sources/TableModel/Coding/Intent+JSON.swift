// The wire shapes of intents. An intent's members sit in the same object as the protocol's envelope (its name,
// base version, request id, ...), so encoding gives the members only and decoding takes the envelope's keys to
// ignore. Rows and sections that already exist are named by `at` (or `from`) plus an optional `id`.

extension Intent {
    /// The intent's members, without its name:
    /// - `insert`: `{at: [s,r], row: {value, editable?, movable?}}`
    /// - `delete`: `{at: [s,r], id?}`
    /// - `move`: `{from: [s,r], id?, to: [s,r]}`
    /// - `edit`: `{at: [s,r], id?, value, editable?, movable?}`
    /// - `insertSection`: `{at: s, section: {header?, footer?, rows?}}`
    /// - `deleteSection`: `{at: s, id?}`
    /// - `moveSection`: `{from: s, id?, to: s}`
    /// - `editSection`: `{at: s, id?, header?, footer?}` (absent: unchanged, null: cleared)
    /// - `batch`: the eight lists of ``ClientBatch/json``
    public var fields: [String: JSONValue] {
        switch self {
        case .insert(let at, let row): return ["at": at.json, "row": row.json]
        case .delete(let ref): return ref.members(key: "at")
        case .move(let from, let to): return from.members(key: "from").merging(["to": to.json]) { $1 }
        case .edit(let ref, let value, let editable, let movable):
            return ClientBatch.RowReload(row: ref, value: value, editable: editable, movable: movable).members
        case .insertSection(let at, let section): return ["at": .number(Double(at)), "section": section.json]
        case .deleteSection(let ref): return ref.members(key: "at")
        case .moveSection(let from, let to): return from.members(key: "from").merging(["to": .number(Double(to))]) { $1 }
        case .editSection(let ref, let header, let footer):
            return ClientBatch.SectionReload(section: ref, header: header, footer: footer).members
        case .batch(let batch): return batch.members
        }
    }

    /// Decodes the intent called `name` from the members of `json`, ignoring the envelope's own keys.
    public init(name: String, json: JSONValue, ignoring envelope: Set<String> = []) throws(JSONDecodingError) {
        func object(_ keys: Set<String>) throws(JSONDecodingError) -> ObjectReader {
            try ObjectReader(json, path: "", allowing: keys, ignoring: envelope)
        }
        switch name {
        case "insert":
            let object = try object(["at", "row"])
            self = .insert(
                at: try object.required("at", Decode.rowPath),
                row: try object.required("row") { (value, path) throws(JSONDecodingError) in try RowContent(json: value, path: path) })
        case "delete": self = .delete(try RowRef(try object(["at", "id"]), key: "at"))
        case "move":
            let object = try object(["from", "id", "to"])
            self = .move(from: try RowRef(object, key: "from"), to: try object.required("to", Decode.rowPath))
        case "edit":
            let reload = try ClientBatch.RowReload(try object(["at", "id", "value", "editable", "movable"]))
            self = .edit(reload.row, value: reload.value, editable: reload.editable, movable: reload.movable)
        case "insertSection":
            let object = try object(["at", "section"])
            self = .insertSection(
                at: try object.required("at", Decode.count),
                section: try object.required("section") { (value, path) throws(JSONDecodingError) in try SectionContent(json: value, path: path) })
        case "deleteSection": self = .deleteSection(try SectionRef(try object(["at", "id"]), key: "at"))
        case "moveSection":
            let object = try object(["from", "id", "to"])
            self = .moveSection(from: try SectionRef(object, key: "from"), to: try object.required("to", Decode.count))
        case "editSection":
            let reload = try ClientBatch.SectionReload(try object(["at", "id", "header", "footer"]))
            self = .editSection(reload.section, header: reload.header, footer: reload.footer)
        case "batch": self = .batch(try ClientBatch(json: json, ignoring: envelope))
        default: throw JSONDecodingError(path: "", message: "unknown intent \"\(name)\"")
        }
    }
}

extension ClientBatch {
    /// The eight lists (all present): `deleteSections: [s | {at, id?}]`, `insertSections: [{at, section}]`,
    /// `reloadSections: [{at, id?, header?, footer?}]`, `moveSections: [{from, id?, to}]`,
    /// `deleteRows: [[s,r] | {at, id?}]`, `insertRows: [{at, row}]`, `reloadRows: [{at, id?, value, editable?,
    /// movable?}]`, `moveRows: [{from, id?, to}]`. A reference without an id encodes as the bare index or path.
    public var json: JSONValue { .object(members) }

    var members: [String: JSONValue] {
        [
            "deleteSections": .array(deleteSections.map { $0.id == nil ? .number(Double($0.index)) : .object($0.members(key: "at")) }),
            "insertSections": .array(insertSections.map { .object(["at": .number(Double($0.at)), "section": $0.section.json]) }),
            "reloadSections": .array(reloadSections.map { .object($0.members) }),
            "moveSections": .array(moveSections.map { .object($0.from.members(key: "from").merging(["to": .number(Double($0.to))]) { $1 }) }),
            "deleteRows": .array(deleteRows.map { $0.id == nil ? $0.path.json : .object($0.members(key: "at")) }),
            "insertRows": .array(insertRows.map { .object(["at": $0.at.json, "row": $0.row.json]) }),
            "reloadRows": .array(reloadRows.map { .object($0.members) }),
            "moveRows": .array(moveRows.map { .object($0.from.members(key: "from").merging(["to": $0.to.json]) { $1 }) }),
        ]
    }

    /// Decodes ``json``; absent lists are empty, and the envelope's keys are ignored.
    public init(json: JSONValue, ignoring envelope: Set<String> = []) throws(JSONDecodingError) {
        let object = try ObjectReader(json, path: "", allowing: Batch.listNames, ignoring: envelope)
        self.init(
            deleteSections: try object.optional("deleteSections", Decode.array { (value, path) throws(JSONDecodingError) in
                if case .number = value { return SectionRef(try Decode.count(value, path)) }
                return try SectionRef(try ObjectReader(value, path: path, allowing: ["at", "id"]), key: "at")
            }) ?? [],
            insertSections: try object.optional("insertSections", Decode.array { (value, path) throws(JSONDecodingError) in
                let entry = try ObjectReader(value, path: path, allowing: ["at", "section"])
                return SectionInsert(
                    at: try entry.required("at", Decode.count),
                    section: try entry.required("section") { (value, path) throws(JSONDecodingError) in try SectionContent(json: value, path: path) })
            }) ?? [],
            reloadSections: try object.optional("reloadSections", Decode.array { (value, path) throws(JSONDecodingError) in
                try SectionReload(try ObjectReader(value, path: path, allowing: ["at", "id", "header", "footer"]))
            }) ?? [],
            moveSections: try object.optional("moveSections", Decode.array { (value, path) throws(JSONDecodingError) in
                let entry = try ObjectReader(value, path: path, allowing: ["from", "id", "to"])
                return SectionMove(from: try SectionRef(entry, key: "from"), to: try entry.required("to", Decode.count))
            }) ?? [],
            deleteRows: try object.optional("deleteRows", Decode.array { (value, path) throws(JSONDecodingError) in
                if case .array = value { return RowRef(try Decode.rowPath(value, path)) }
                return try RowRef(try ObjectReader(value, path: path, allowing: ["at", "id"]), key: "at")
            }) ?? [],
            insertRows: try object.optional("insertRows", Decode.array { (value, path) throws(JSONDecodingError) in
                let entry = try ObjectReader(value, path: path, allowing: ["at", "row"])
                return RowInsert(
                    at: try entry.required("at", Decode.rowPath),
                    row: try entry.required("row") { (value, path) throws(JSONDecodingError) in try RowContent(json: value, path: path) })
            }) ?? [],
            reloadRows: try object.optional("reloadRows", Decode.array { (value, path) throws(JSONDecodingError) in
                try RowReload(try ObjectReader(value, path: path, allowing: ["at", "id", "value", "editable", "movable"]))
            }) ?? [],
            moveRows: try object.optional("moveRows", Decode.array { (value, path) throws(JSONDecodingError) in
                let entry = try ObjectReader(value, path: path, allowing: ["from", "id", "to"])
                return RowMove(from: try RowRef(entry, key: "from"), to: try entry.required("to", Decode.rowPath))
            }) ?? [])
    }
}

extension ClientBatch.SectionReload {
    var members: [String: JSONValue] {
        var members = section.members(key: "at")
        if let header { members["header"] = header.json }
        if let footer { members["footer"] = footer.json }
        return members
    }

    init(_ object: ObjectReader) throws(JSONDecodingError) {
        self.init(
            section: try SectionRef(object, key: "at"), header: try object.optional("header", Decode.nullableString),
            footer: try object.optional("footer", Decode.nullableString))
    }
}

extension ClientBatch.RowReload {
    var members: [String: JSONValue] {
        var members = row.members(key: "at")
        members["value"] = value
        if let editable { members["editable"] = .bool(editable) }
        if let movable { members["movable"] = .bool(movable) }
        return members
    }

    init(_ object: ObjectReader) throws(JSONDecodingError) {
        self.init(
            row: try RowRef(object, key: "at"), value: try object.required("value", Decode.any),
            editable: try object.optional("editable", Decode.bool), movable: try object.optional("movable", Decode.bool))
    }
}

extension RowRef {
    /// `{key: [s,r], id?}`.
    func members(key: String) -> [String: JSONValue] {
        var members: [String: JSONValue] = [key: path.json]
        if let id { members["id"] = .string(id) }
        return members
    }

    init(_ object: ObjectReader, key: String) throws(JSONDecodingError) {
        self.init(try object.required(key, Decode.rowPath), id: try object.optional("id", Decode.string))
    }
}

extension SectionRef {
    /// `{key: s, id?}`.
    func members(key: String) -> [String: JSONValue] {
        var members: [String: JSONValue] = [key: .number(Double(index))]
        if let id { members["id"] = .string(id) }
        return members
    }

    init(_ object: ObjectReader, key: String) throws(JSONDecodingError) {
        self.init(try object.required(key, Decode.count), id: try object.optional("id", Decode.string))
    }
}
