import TableModel

extension ServerMessage {
    /// Decodes one server message (the client side; the inverse of ``encoded``). Unknown members are ignored, so a
    /// newer server may add fields; a missing or mistyped field is a `JSONDecodingError` naming it.
    public static func decode(_ bytes: [UInt8]) throws(JSONDecodingError) -> ServerMessage {
        if let update = decodeUpdate(bytes) { return update }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes)
        } catch {
            throw JSONDecodingError(path: "", message: error.description)
        }
        return try decode(json)
    }

    /// Decodes a parsed server message (see ``decode(_:)-([UInt8])``).
    public static func decode(_ json: JSONValue) throws(JSONDecodingError) -> ServerMessage {
        let fields = try JSONObjectReader(lenient: json, path: "")
        let type = try fields.string("type")
        switch type {
        case "welcome":
            let server = try JSONObjectReader(lenient: fields.value("server"), path: "server")
            let limits = try JSONObjectReader(lenient: fields.value("limits"), path: "limits")
            return .welcome(
                Welcome(
                    ref: try fields.optionalString("ref"), client: try fields.string("client"),
                    serverName: try server.string("name"), serverVersion: try server.string("version"),
                    maxMessageBytes: try limits.int("maxMessageBytes"),
                    maxBatchEntries: try limits.int("maxBatchEntries"),
                    intentsPerSecond: try limits.int("intentsPerSecond")))
        case "ack" where try fields.optional("table", JSONDecode.any) == nil:
            // The ack of a refreshToken: it names no table.
            let expires: Double? =
                switch try fields.optional("expires", JSONDecode.any) {
                case .number(let seconds)?: seconds
                case nil: nil
                default: throw JSONDecodingError(path: "expires", message: "expected a number")
                }
            return .tokenRefreshed(ref: try fields.optionalString("ref"), expires: expires)
        case "ack":
            let created = try fields.optionalArray("created")?.enumerated().map {
                (index, value) throws(JSONDecodingError) -> String in
                guard case .string(let id) = value else {
                    throw JSONDecodingError(path: "created[\(index)]", message: "expected a string")
                }
                return id
            }
            return .ack(
                Ack(
                    ref: try fields.optionalString("ref"), table: try fields.string("table"),
                    version: try fields.version("version"),
                    epoch: try fields.optionalString("epoch"), created: created ?? [],
                    resolved: try fields.optionalArray("resolved") ?? [], noop: try fields.optionalBool("noop") ?? false
                ))
        case "error":
            let code = try fields.string("code")
            return .error(
                ProtocolError(
                    ProtocolError.Code(rawValue: code) ?? .internal, try fields.string("message"),
                    at: try fields.optionalString("at"), ref: try fields.optionalString("ref")))
        case "snapshot":
            let sections = try fields.optional("sections", JSONDecode.array(Section.init(json:path:))) ?? []
            if try fields.optionalBool("historical") == true {
                return .historicalSnapshot(
                    ref: try fields.optionalString("ref"), table: try fields.string("table"),
                    version: try fields.version("version"), epoch: try fields.string("epoch"),
                    rules: try fields.rules(),
                    sections: sections)
            }
            return .snapshot(
                table: try fields.string("table"), version: try fields.version("version"),
                epoch: try fields.string("epoch"),
                rules: try fields.rules(), sections: sections)
        case "update":
            guard case .object(var members) = json else { preconditionFailure("checked by the reader") }
            let origin = try JSONObjectReader(lenient: fields.value("origin"), path: "origin")
            for key in ["type", "table", "version", "origin"] { members[key] = nil }
            return .update(
                Update(
                    table: try fields.string("table"), version: try fields.version("version"),
                    originClient: try origin.string("client"), originRef: try origin.optionalString("ref"),
                    batch: try Batch(json: .object(members))))
        case "subscribed", "refreshed":
            let status = TableStatus(
                table: try fields.string("table"), version: try fields.version("version"),
                epoch: try fields.string("epoch"),
                rules: try fields.rules(), presence: try fields.optionalPresenceState("presence"))
            let ref = try fields.optionalString("ref")
            return type == "subscribed" ? .subscribed(ref: ref, status: status) : .refreshed(ref: ref, status: status)
        case "unsubscribed":
            return .unsubscribed(
                ref: try fields.optionalString("ref"), table: try fields.string("table"),
                reason: try fields.optionalString("reason"))
        case "tables":
            let tables = try (fields.optionalArray("tables") ?? []).enumerated().map {
                (index, value) throws(JSONDecodingError) -> TableSummary in
                let entry = try JSONObjectReader(lenient: value, path: "tables[\(index)]")
                return TableSummary(
                    table: try entry.string("table"), version: try entry.version("version"),
                    epoch: try entry.string("epoch"),
                    subscribers: try entry.int("subscribers"))
            }
            return .tables(ref: try fields.optionalString("ref"), tables)
        case "presence":
            let left = try fields.array("left").enumerated().map { (index, value) throws(JSONDecodingError) -> String in
                guard case .string(let key) = value else {
                    throw JSONDecode.mismatch("a string", value, "left[\(index)]")
                }
                return key
            }
            return .presence(
                PresenceDelta(
                    table: try fields.string("table"), joined: try fields.presenceEntries("joined"),
                    changed: try fields.presenceEntries("changed"), left: left, viewers: try fields.int("viewers")))
        case "changes":
            let entries = try (fields.optionalArray("entries") ?? []).enumerated().map {
                (index, value) throws(JSONDecodingError) -> HistoryEntry in
                try historyEntry(value, path: "entries[\(index)]")
            }
            return .changes(
                Changes(
                    ref: try fields.optionalString("ref"), table: try fields.string("table"),
                    epoch: try fields.string("epoch"), version: try fields.version("version"),
                    oldest: try fields.version("oldest"), entries: entries,
                    next: try fields.optional("next", JSONDecode.version)))
        case "dropped":
            return .dropped(table: try fields.string("table"))
        case "rules":
            return .rules(table: try fields.string("table"), rules: try fields.rules())
        default:
            throw JSONDecodingError(path: "type", message: "unknown server message type '\(type)'")
        }
    }

    private static func historyEntry(_ value: JSONValue, path: String) throws(JSONDecodingError) -> HistoryEntry {
        guard case .object(var members) = value else {
            throw JSONDecodingError(path: path, message: "expected an object")
        }
        let entry = try JSONObjectReader(lenient: value, path: path)
        let origin = try JSONObjectReader(lenient: entry.value("origin"), path: path + ".origin")
        for key in ["version", "time", "origin"] { members[key] = nil }
        guard case .number(let time) = try entry.value("time") else {
            throw JSONDecodingError(path: path + ".time", message: "expected a number")
        }
        return HistoryEntry(
            version: try entry.version("version"), time: Int64(time), originClient: try origin.string("client"),
            originName: try origin.optionalString("name"), originRef: try origin.optionalString("ref"),
            batch: try Batch(json: .object(members)), originUser: try origin.optionalString("user"))
    }

    /// The `ref` the message answers, for the responses that carry one.
    public var ref: String? {
        switch self {
        case .welcome(let welcome): welcome.ref
        case .ack(let ack): ack.ref
        case .error(let error): error.ref
        case .subscribed(let ref, _), .refreshed(let ref, _), .unsubscribed(let ref, _, _), .tables(let ref, _),
            .historicalSnapshot(let ref, _, _, _, _, _), .tokenRefreshed(let ref, _):
            ref
        case .changes(let changes): changes.ref
        case .snapshot, .update, .presence, .dropped, .rules: nil
        }
    }
}

/// Server messages are read leniently: unknown members are ignored, so a newer server may add fields.
extension JSONObjectReader {
    fileprivate init(lenient value: JSONValue, path: String) throws(JSONDecodingError) {
        try self.init(value, path: path, allowing: nil)
    }

    fileprivate func array(_ key: String) throws(JSONDecodingError) -> [JSONValue] {
        try required(key, JSONDecode.array(JSONDecode.any))
    }

    fileprivate func presenceEntries(_ key: String) throws(JSONDecodingError) -> [PresenceEntry] {
        try array(key).enumerated().map { (index, value) throws(JSONDecodingError) -> PresenceEntry in
            let entry = try JSONObjectReader(lenient: value, path: "\(path(key))[\(index)]")
            return PresenceEntry(
                key: try entry.string("key"), client: try entry.string("client"), name: try entry.string("name"),
                editing: try entry.optionalBool("editing") ?? false, row: try entry.optionalString("row"),
                user: try entry.optionalString("user"))
        }
    }

    fileprivate func optionalPresenceState(_ key: String) throws(JSONDecodingError) -> PresenceState? {
        guard let value = try optional(key, JSONDecode.any) else { return nil }
        let state = try JSONObjectReader(lenient: value, path: path(key))
        return PresenceState(
            you: try state.string("you"), clients: try state.presenceEntries("clients"),
            viewers: try state.int("viewers"))
    }

    fileprivate func value(_ key: String) throws(JSONDecodingError) -> JSONValue { try required(key, JSONDecode.any) }

    fileprivate func string(_ key: String) throws(JSONDecodingError) -> String { try required(key, JSONDecode.string) }

    /// Absent and null are both nil.
    fileprivate func optionalString(_ key: String) throws(JSONDecodingError) -> String? {
        try optional(key, JSONDecode.nullableString) ?? nil
    }

    fileprivate func optionalBool(_ key: String) throws(JSONDecodingError) -> Bool? {
        try optional(key, JSONDecode.bool)
    }

    fileprivate func optionalArray(_ key: String) throws(JSONDecodingError) -> [JSONValue]? {
        try optional(key, JSONDecode.array(JSONDecode.any))
    }

    fileprivate func int(_ key: String) throws(JSONDecodingError) -> Int { try required(key, JSONDecode.count) }

    fileprivate func version(_ key: String) throws(JSONDecodingError) -> UInt64 {
        try required(key, JSONDecode.version)
    }

    fileprivate func rules() throws(JSONDecodingError) -> TableRules {
        try required("rules", TableRules.init(json:path:))
    }
}
