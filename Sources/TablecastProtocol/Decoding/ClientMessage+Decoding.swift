import TableModel

extension ClientMessage {
    /// Decodes one text message. Every refusal is a ``ProtocolError`` (`bad_request`, `unknown_type` or
    /// `limit_exceeded`) naming the problem, carrying the message's `ref` whenever it could be read.
    public static func decode(_ bytes: [UInt8], limits: ProtocolLimits = ProtocolLimits()) throws(ProtocolError)
        -> ClientMessage
    {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes)
        } catch {
            throw .badRequest(error.description)
        }
        return try decode(json, limits: limits)
    }

    /// Decodes a parsed message (see ``decode(_:limits:)``).
    public static func decode(_ json: JSONValue, limits: ProtocolLimits = ProtocolLimits()) throws(ProtocolError)
        -> ClientMessage
    {
        guard case .object(let members) = json else { throw .badRequest("a message must be a JSON object") }
        // Read ref first so every later error can echo it.
        var ref: String?
        switch members["ref"] {
        case nil: ref = nil
        case .string(let value)? where value.count <= limits.maxRefLength: ref = value
        case .string?: throw .badRequest("field 'ref' must be at most \(limits.maxRefLength) characters")
        default: throw .badRequest("field 'ref' must be a string")
        }
        guard let typeValue = members["type"] else {
            throw ProtocolError(.badRequest, "missing field 'type'", ref: ref)
        }
        guard case .string(let type) = typeValue else {
            throw ProtocolError(.badRequest, "field 'type' must be a string", ref: ref)
        }
        do {
            return ClientMessage(ref: ref, try body(type: type, json: json, limits: limits))
        } catch {
            var error = error
            error.ref = ref
            throw error
        }
    }

    private static func body(type: String, json: JSONValue, limits: ProtocolLimits) throws(ProtocolError) -> Body {
        let fields = try FieldReader(json, context: type)
        switch type {
        case "hello":
            let client = try fields.string("client")
            guard (1...limits.maxClientIDLength).contains(client.count) else {
                throw fields.failure("client", "1 to \(limits.maxClientIDLength) characters")
            }
            let name = try fields.optionalString("name")
            guard (name?.count ?? 0) <= limits.maxClientIDLength else {
                throw fields.failure("name", "at most \(limits.maxClientIDLength) characters")
            }
            return .hello(client: client, name: name, token: try fields.optionalString("token"))
        case "createTable":
            let sections = try (fields.optionalArray("sections") ?? []).enumerated().map {
                (index, element) throws(ProtocolError) in
                let context = "createTable.sections[\(index)]"
                return try sectionContent(FieldReader(element, context: context), context: context)
            }
            let rules = try fields.contains("rules") ? rulesPatch(fields.value("rules")) : RulesPatch()
            return .createTable(table: try tableName(fields), sections: sections, rules: rules)
        case "dropTable":
            return .dropTable(table: try tableName(fields))
        case "setRules":
            return .setRules(table: try tableName(fields), rules: try rulesPatch(fields.value("rules")))
        case "listTables":
            return .listTables
        case "subscribe", "refresh", "unsubscribe":
            let table = try tableName(fields)
            if type == "unsubscribe" { return .unsubscribe(table: table) }
            let since = try fields.optionalVersion("since")
            let epoch = try fields.optionalString("epoch")
            return type == "subscribe"
                ? .subscribe(table: table, since: since, epoch: epoch)
                : .refresh(table: table, since: since, epoch: epoch)
        case "editing":
            return .editing(table: try tableName(fields), on: try fields.bool("on"))
        case "beginEditingRow":
            return .beginEditingRow(table: try tableName(fields), row: try fields.string("row"))
        case "endEditingRow":
            return .endEditingRow(table: try tableName(fields), row: try fields.string("row"))
        case "insert", "delete", "move", "edit", "insertSection", "deleteSection", "moveSection", "editSection",
            "batch":
            let table = try tableName(fields)
            let base = try fields.optionalVersion("base")
            return .intent(table: table, base: base, try intent(type: type, fields: fields, limits: limits))
        default:
            throw ProtocolError(.unknownType, "unknown message type '\(type)'")
        }
    }

    /// Table names: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    static func tableName(_ fields: FieldReader) throws(ProtocolError) -> String {
        let name = try fields.string("table")
        let bytes = Array(name.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        let valid =
            (1...64).contains(bytes.count) && isAlphanumeric(bytes[0])
            && bytes.dropFirst().allSatisfy {
                isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
        guard valid else {
            throw .badRequest(
                "\(fields.context): table name '\(name)' is not valid: 1 to 64 characters of letters, digits, '.', '_' "
                    + "and '-', starting with a letter or digit")
        }
        return name
    }

    static func rulesPatch(_ json: JSONValue) throws(ProtocolError) -> RulesPatch {
        let fields = try FieldReader(json, context: "rules")
        var patch = RulesPatch()
        if let moves = try fields.optionalString("moves") {
            guard let value = TableRules.Moves(rawValue: moves) else {
                throw fields.failure("moves", "one of \"any\", \"withinSection\", \"none\"")
            }
            patch.moves = value
        }
        patch.reserveLastRow = try fields.optionalBool("reserveLastRow")
        if let title = try fields.optionalString("deleteConfirmationTitle") {
            guard (1...64).contains(title.count) else { throw fields.failure("deleteConfirmationTitle", "1 to 64 characters") }
            patch.deleteConfirmationTitle = title
        }
        func positive(_ key: String) throws(ProtocolError) -> Int? {
            guard fields.contains(key) else { return nil }
            let value = try fields.index(key)
            guard value >= 1 else { throw fields.failure(key, "a positive integer") }
            return value
        }
        patch.maxSections = try positive("maxSections")
        patch.maxRowsPerSection = try positive("maxRowsPerSection")
        patch.maxValueBytes = try positive("maxValueBytes")
        return patch
    }
}
