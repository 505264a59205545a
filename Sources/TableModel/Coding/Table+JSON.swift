// The wire and store shapes of the table's values. Each type converts to a `JSONValue` with `json` and back with
// `init(json:)`; decoding is strict about types and unknown members and names the path of what was wrong.

extension RowPath {
    /// Decodes `[section, row]`.
    public init(json: JSONValue) throws(JSONDecodingError) { self = try JSONDecode.rowPath(json, "") }
}

extension Row {
    /// `{"id", "value"}`, plus `"editable": false` / `"movable": false` only when a flag is off and
    /// `"editingStyle"` only when it is not `delete`.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["id": .string(id), "value": value]
        if !editable { members["editable"] = false }
        if !movable { members["movable"] = false }
        if editingStyle != .delete { members["editingStyle"] = .string(editingStyle.rawValue) }
        return .object(members)
    }

    /// Decodes ``json``; absent flags are `true`.
    public init(json: JSONValue) throws(JSONDecodingError) { try self.init(json: json, path: "") }

    /// Decodes ``json`` found at `path`, which errors name.
    public init(json: JSONValue, path: String) throws(JSONDecodingError) {
        let object = try JSONObjectReader(
            json, path: path, allowing: ["id", "value", "editable", "movable", "editingStyle"])
        self.init(
            id: try object.required("id", JSONDecode.string), value: try object.required("value", JSONDecode.any),
            editable: try object.optional("editable", JSONDecode.bool) ?? true,
            movable: try object.optional("movable", JSONDecode.bool) ?? true,
            editingStyle: try object.optional("editingStyle", JSONDecode.editingStyle) ?? .delete)
    }
}

extension RowContent {
    /// `{"value"}`, plus `"editable": false` / `"movable": false` only when a flag is off and `"editingStyle"`
    /// only when it is not `delete`.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["value": value]
        if !editable { members["editable"] = false }
        if !movable { members["movable"] = false }
        if editingStyle != .delete { members["editingStyle"] = .string(editingStyle.rawValue) }
        return .object(members)
    }

    /// Decodes ``json``; absent flags are `true`.
    public init(json: JSONValue) throws(JSONDecodingError) { try self.init(json: json, path: "") }

    /// Decodes ``json`` found at `path`, which errors name.
    public init(json: JSONValue, path: String) throws(JSONDecodingError) {
        try self.init(reading: JSONObjectReader(json, path: path, allowing: Self.jsonKeys))
    }

    /// The members of the content's JSON form.
    public static let jsonKeys: Set<String> = ["value", "editable", "movable", "editingStyle"]

    /// Reads the content's members (``jsonKeys``) from `object`, which may hold others (a protocol message's).
    public init(reading object: JSONObjectReader) throws(JSONDecodingError) {
        self.init(
            value: try object.required("value", JSONDecode.any),
            editable: try object.optional("editable", JSONDecode.bool) ?? true,
            movable: try object.optional("movable", JSONDecode.bool) ?? true,
            editingStyle: try object.optional("editingStyle", JSONDecode.editingStyle) ?? .delete)
    }
}

extension Section {
    /// `{"id", "header", "footer", "rows": [...]}`; header and footer are null when absent.
    public var json: JSONValue {
        .object(["id": .string(id), "header": header.json, "footer": footer.json, "rows": .array(rows.map(\.json))])
    }

    /// Decodes ``json``; a missing header or footer is absent.
    public init(json: JSONValue) throws(JSONDecodingError) { try self.init(json: json, path: "") }

    /// Decodes ``json`` found at `path`, which errors name.
    public init(json: JSONValue, path: String) throws(JSONDecodingError) {
        let object = try JSONObjectReader(json, path: path, allowing: ["id", "header", "footer", "rows"])
        self.init(
            id: try object.required("id", JSONDecode.string),
            header: try object.optional("header", JSONDecode.nullableString) ?? nil,
            footer: try object.optional("footer", JSONDecode.nullableString) ?? nil,
            rows: try object.required(
                "rows", JSONDecode.array { (value, path) throws(JSONDecodingError) in try Row(json: value, path: path) }
            ))
    }
}

extension SectionContent {
    /// `{"header", "footer", "rows": [...]}`; header and footer are null when absent.
    public var json: JSONValue {
        .object(["header": header.json, "footer": footer.json, "rows": .array(rows.map(\.json))])
    }

    /// Decodes ``json``; every member is optional (no header, no footer, no rows).
    public init(json: JSONValue) throws(JSONDecodingError) { try self.init(json: json, path: "") }

    /// Decodes ``json`` found at `path`, which errors name.
    public init(json: JSONValue, path: String) throws(JSONDecodingError) {
        try self.init(reading: JSONObjectReader(json, path: path, allowing: Self.jsonKeys))
    }

    /// The members of the content's JSON form.
    public static let jsonKeys: Set<String> = ["header", "footer", "rows"]

    /// Reads the content's members (``jsonKeys``) from `object`, which may hold others (a protocol message's).
    public init(reading object: JSONObjectReader) throws(JSONDecodingError) {
        self.init(
            header: try object.optional("header", JSONDecode.nullableString) ?? nil,
            footer: try object.optional("footer", JSONDecode.nullableString) ?? nil,
            rows: try object.optional(
                "rows",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in try RowContent(json: value, path: path) })
                ?? [])
    }
}

extension TableRules {
    /// `{"moves", "reserveLastRow", "deleteConfirmationTitle", "maxSections", "maxRowsPerSection", "maxValueBytes"}`.
    public var json: JSONValue {
        .object([
            "moves": .string(moves.rawValue), "reserveLastRow": .bool(reserveLastRow),
            "deleteConfirmationTitle": .string(deleteConfirmationTitle), "maxSections": .number(Double(maxSections)),
            "maxRowsPerSection": .number(Double(maxRowsPerSection)), "maxValueBytes": .number(Double(maxValueBytes)),
        ])
    }

    /// Decodes ``json``; absent members take their defaults, so `{}` is the default rules.
    public init(json: JSONValue) throws(JSONDecodingError) { try self.init(json: json, path: "") }

    /// Decodes ``json`` found at `path`, which errors name.
    public init(json: JSONValue, path: String) throws(JSONDecodingError) {
        let object = try JSONObjectReader(json, path: path, allowing: Self.jsonKeys)
        let defaults = TableRules()
        self.init(
            moves: try object.optional("moves", Moves.decode) ?? defaults.moves,
            reserveLastRow: try object.optional("reserveLastRow", JSONDecode.bool) ?? defaults.reserveLastRow,
            deleteConfirmationTitle: try object.optional("deleteConfirmationTitle", JSONDecode.string)
                ?? defaults.deleteConfirmationTitle,
            maxSections: try object.optional("maxSections", JSONDecode.count) ?? defaults.maxSections,
            maxRowsPerSection: try object.optional("maxRowsPerSection", JSONDecode.count) ?? defaults.maxRowsPerSection,
            maxValueBytes: try object.optional("maxValueBytes", JSONDecode.count) ?? defaults.maxValueBytes)
    }

    /// The members of the rules' JSON form (every one optional).
    public static let jsonKeys: Set<String> = [
        "moves", "reserveLastRow", "deleteConfirmationTitle", "maxSections", "maxRowsPerSection", "maxValueBytes",
    ]
}

extension TableRules.Moves {
    /// Decodes `"any"`, `"withinSection"` or `"none"` found at `path`.
    public static func decode(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> Self {
        guard case .string(let name) = value, let moves = Self(rawValue: name) else {
            throw JSONDecode.mismatch("one of \"any\", \"withinSection\", \"none\"", value, path)
        }
        return moves
    }
}

extension Table {
    /// The snapshot: `{"version", "nextID", "rules", "sections": [...]}`; restoring it restores the id generator.
    public var json: JSONValue {
        .object([
            "version": .number(Double(version)), "nextID": .number(Double(nextID)), "rules": rules.json,
            "sections": .array(sections.map(\.json)),
        ])
    }

    /// Decodes a snapshot (see ``json``). Duplicate ids, and generated-looking ids the generator could still assign
    /// (`s<n>`/`r<n>` with n ≥ `nextID`), are refused, since every later batch relies on ids being unique.
    public init(json: JSONValue) throws(JSONDecodingError) {
        let object = try JSONObjectReader(json, path: "", allowing: ["version", "nextID", "rules", "sections"])
        self.init(
            sections: try object.required(
                "sections",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in try Section(json: value, path: path) }),
            version: try object.required("version", JSONDecode.version),
            rules: try object.required("rules") { (value, path) throws(JSONDecodingError) in
                try TableRules(json: value, path: path)
            },
            nextID: try object.required("nextID", JSONDecode.version))
        var seen = Set<String>()
        let nextID = nextID
        func check(_ id: String, _ kind: IDKind, _ path: String) throws(JSONDecodingError) {
            if !seen.insert(id).inserted { throw JSONDecodingError(path: path, message: "duplicate id \"\(id)\"") }
            if id.hasPrefix(kind.rawValue), let number = UInt64(id.dropFirst()), number >= nextID,
                Table.id(kind, number) == id
            {
                throw JSONDecodingError(path: path, message: "id \"\(id)\" is not below nextID \(nextID)")
            }
        }
        for (sectionIndex, section) in sections.enumerated() {
            try check(section.id, .section, "sections[\(sectionIndex)].id")
            for (rowIndex, row) in section.rows.enumerated() {
                try check(row.id, .row, "sections[\(sectionIndex)].rows[\(rowIndex)].id")
            }
        }
    }
}
