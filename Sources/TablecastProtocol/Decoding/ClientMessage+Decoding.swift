import TableModel

extension ClientMessage {
    /// Decodes one text message. Every refusal is a ``ProtocolError`` (`bad_request`, `unknown_type` or
    /// `limit_exceeded`) naming the problem, carrying the message's `ref` whenever it could be read. A member the
    /// message type does not have is a `bad_request` naming it, in nested objects too.
    public static func decode(_ bytes: [UInt8], limits: ProtocolLimits = ProtocolLimits()) throws(ProtocolError)
        -> ClientMessage
    {
        if let message = decodeRowIntent(bytes, limits: limits) { return message }
        let message: JSONObjectReader?
        do {
            message = try JSONObjectReader(parsing: bytes)
        } catch {
            throw .badRequest(error.description)
        }
        guard let message else { throw .badRequest("a message must be a JSON object") }
        return try decode(message, limits: limits)
    }

    /// Decodes a parsed message (see ``decode(_:limits:)``).
    public static func decode(_ json: JSONValue, limits: ProtocolLimits = ProtocolLimits()) throws(ProtocolError)
        -> ClientMessage
    {
        // The reader refuses only what is not an object.
        guard let message = try? JSONObjectReader(json, path: "", allowing: nil) else {
            throw .badRequest("a message must be a JSON object")
        }
        return try decode(message, limits: limits)
    }

    private static func decode(_ message: JSONObjectReader, limits: ProtocolLimits) throws(ProtocolError)
        -> ClientMessage
    {
        // Read ref first so every later error can echo it.
        var ref: String?
        switch message["ref"] {
        case nil: ref = nil
        case .string(let value)? where value.count <= limits.maxRefLength: ref = value
        case .string?: throw .badRequest("field 'ref' must be at most \(limits.maxRefLength) characters")
        default: throw .badRequest("field 'ref' must be a string")
        }
        guard let typeValue = message["type"] else {
            throw ProtocolError(.badRequest, "missing field 'type'", ref: ref)
        }
        guard case .string(let type) = typeValue else {
            throw ProtocolError(.badRequest, "field 'type' must be a string", ref: ref)
        }
        do {
            return ClientMessage(ref: ref, try body(type: type, message: message, limits: limits))
        } catch var error as ProtocolError {
            error.ref = ref
            throw error
        } catch let error as JSONDecodingError {
            throw ProtocolError(.badRequest, error.description, at: error.path, ref: ref)
        } catch {
            throw ProtocolError(.internal, "decoding failed: \(error)", ref: ref)
        }
    }

    /// The members of each message type, `type` and `ref` included; any other member is refused.
    static let messageKeys: [String: Set<String>] = {
        var keys: [String: Set<String>] = [
            "hello": ["client", "name", "token"],
            "refreshToken": ["token"],
            "createTable": ["table", "sections", "rules"],
            "dropTable": ["table"],
            "setRules": ["table", "rules"],
            "listTables": [],
            "subscribe": ["table", "since", "epoch"],
            "refresh": ["table", "since", "epoch"],
            "unsubscribe": ["table"],
            "editing": ["table", "on"],
            "beginEditingRow": ["table", "row"],
            "endEditingRow": ["table", "row"],
            "history": ["table", "from", "to", "limit", "order"],
            "snapshotAt": ["table", "version"],
            "batch": Set(BatchList.allCases.map(\.rawValue)).union(["table", "base"]),
        ]
        for (type, list) in singleChangeIntents { keys[type] = entryKeys[list]!.union(["table", "base"]) }
        return keys.mapValues { $0.union(["type", "ref"]) }
    }()

    /// Decodes the body of a message whose `type` is known to be a string. Throws ``ProtocolError`` or
    /// `JSONDecodingError`.
    private static func body(type: String, message: JSONObjectReader, limits: ProtocolLimits) throws -> Body {
        guard let keys = messageKeys[type] else {
            throw ProtocolError(.unknownType, "unknown message type '\(type)'")
        }
        let fields = try message.reading(at: type, allowing: keys)
        switch type {
        case "hello":
            let client = try fields.required("client", JSONDecode.string)
            guard (1...limits.maxClientIDLength).contains(client.count) else {
                throw fields.failure("client", expected: "1 to \(limits.maxClientIDLength) characters")
            }
            let name = try fields.optional("name", JSONDecode.string)
            guard (name?.count ?? 0) <= limits.maxClientIDLength else {
                throw fields.failure("name", expected: "at most \(limits.maxClientIDLength) characters")
            }
            return .hello(client: client, name: name, token: try fields.optional("token", JSONDecode.string))
        case "refreshToken":
            return .refreshToken(token: try fields.required("token", JSONDecode.string))
        case "createTable":
            let sections = try fields.optional("sections", JSONDecode.array(SectionContent.init(json:path:))) ?? []
            let rules = try fields.optional("rules", rulesPatch) ?? RulesPatch()
            return .createTable(table: try tableName(fields), sections: sections, rules: rules)
        case "dropTable":
            return .dropTable(table: try tableName(fields))
        case "setRules":
            return .setRules(table: try tableName(fields), rules: try fields.required("rules", rulesPatch))
        case "listTables":
            return .listTables
        case "subscribe", "refresh", "unsubscribe":
            let table = try tableName(fields)
            if type == "unsubscribe" { return .unsubscribe(table: table) }
            let since = try fields.optional("since", JSONDecode.version)
            let epoch = try fields.optional("epoch", JSONDecode.string)
            return type == "subscribe"
                ? .subscribe(table: table, since: since, epoch: epoch)
                : .refresh(table: table, since: since, epoch: epoch)
        case "editing":
            return .editing(table: try tableName(fields), on: try fields.required("on", JSONDecode.bool))
        case "beginEditingRow":
            return .beginEditingRow(table: try tableName(fields), row: try fields.required("row", JSONDecode.string))
        case "endEditingRow":
            return .endEditingRow(table: try tableName(fields), row: try fields.required("row", JSONDecode.string))
        case "history":
            let table = try tableName(fields)
            let limit = try fields.optional("limit", JSONDecode.count)
            if let limit, !(1...limits.maxHistoryEntries).contains(limit) {
                throw fields.failure("limit", expected: "1 to \(limits.maxHistoryEntries)")
            }
            let order = try fields.optional("order", JSONDecode.string) ?? "newest"
            guard order == "newest" || order == "oldest" else {
                throw fields.failure("order", expected: "\"newest\" or \"oldest\"")
            }
            return .history(
                table: table, from: try fields.optional("from", JSONDecode.version),
                to: try fields.optional("to", JSONDecode.version), limit: limit, newestFirst: order == "newest")
        case "snapshotAt":
            return .snapshotAt(
                table: try tableName(fields), version: try fields.required("version", JSONDecode.version))
        default:
            let table = try tableName(fields)
            let base = try fields.optional("base", JSONDecode.version)
            return .intent(table: table, base: base, try intent(type: type, fields: fields, limits: limits))
        }
    }

    /// Table names: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    static func tableName(_ fields: JSONObjectReader) throws(JSONDecodingError) -> String {
        let name = try fields.required("table", JSONDecode.string)
        let bytes = Array(name.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        let valid =
            (1...64).contains(bytes.count) && isAlphanumeric(bytes[0])
            && bytes.dropFirst().allSatisfy {
                isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
        guard valid else {
            throw JSONDecodingError(
                path: fields.path("table"),
                message: "table name '\(name)' is not valid: 1 to 64 characters of letters, digits, '.', '_' and '-', "
                    + "starting with a letter or digit")
        }
        return name
    }

    /// A rules patch: any subset of the rules' members, each checked as a new table's would be.
    static func rulesPatch(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> RulesPatch {
        let fields = try JSONObjectReader(value, path: path, allowing: TableRules.jsonKeys)
        var patch = RulesPatch()
        patch.moves = try fields.optional("moves", TableRules.Moves.decode)
        patch.reserveLastRow = try fields.optional("reserveLastRow", JSONDecode.bool)
        if let title = try fields.optional("deleteConfirmationTitle", JSONDecode.string) {
            guard (1...64).contains(title.count) else {
                throw fields.failure("deleteConfirmationTitle", expected: "1 to 64 characters")
            }
            patch.deleteConfirmationTitle = title
        }
        func positive(_ key: String) throws(JSONDecodingError) -> Int? {
            guard let value = try fields.optional(key, JSONDecode.count) else { return nil }
            guard value >= 1 else { throw fields.failure(key, expected: "a positive integer") }
            return value
        }
        patch.maxSections = try positive("maxSections")
        patch.maxRowsPerSection = try positive("maxRowsPerSection")
        patch.maxValueBytes = try positive("maxValueBytes")
        return patch
    }
}
