import TableModel

extension ServerMessage {
    /// Decodes one server message (the client side; the inverse of ``encoded``). Unknown members are ignored, so a
    /// newer server may add fields; a missing or mistyped field is a `JSONDecodingError` naming it.
    public static func decode(_ bytes: [UInt8]) throws(JSONDecodingError) -> ServerMessage {
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
        let fields = try Members(json, path: "")
        let type = try fields.string("type")
        switch type {
        case "welcome":
            let server = try Members(fields.value("server"), path: "server")
            let limits = try Members(fields.value("limits"), path: "limits")
            return .welcome(
                Welcome(
                    ref: try fields.optionalString("ref"), client: try fields.string("client"),
                    serverName: try server.string("name"), serverVersion: try server.string("version"),
                    maxMessageBytes: try limits.int("maxMessageBytes"), maxBatchEntries: try limits.int("maxBatchEntries"),
                    intentsPerSecond: try limits.int("intentsPerSecond")))
        case "ack":
            let created = try fields.optionalArray("created")?.enumerated().map {
                (index, value) throws(JSONDecodingError) -> String in
                guard case .string(let id) = value else { throw JSONDecodingError(path: "created[\(index)]", message: "expected a string") }
                return id
            }
            return .ack(
                Ack(
                    ref: try fields.optionalString("ref"), table: try fields.string("table"), version: try fields.version("version"),
                    epoch: try fields.optionalString("epoch"), created: created ?? [],
                    resolved: try fields.optionalArray("resolved") ?? [], noop: try fields.optionalBool("noop") ?? false))
        case "error":
            let code = try fields.string("code")
            return .error(
                ProtocolError(
                    ProtocolError.Code(rawValue: code) ?? .internal, try fields.string("message"),
                    at: try fields.optionalString("at"), ref: try fields.optionalString("ref")))
        case "snapshot":
            let sections = try (fields.optionalArray("sections") ?? []).enumerated().map {
                (index, value) throws(JSONDecodingError) -> Section in
                do throws(JSONDecodingError) { return try Section(json: value) } catch { throw error.nested(in: "sections[\(index)]") }
            }
            return .snapshot(
                table: try fields.string("table"), version: try fields.version("version"), epoch: try fields.string("epoch"),
                rules: try fields.rules(), sections: sections)
        case "update":
            guard case .object(var members) = json else { preconditionFailure("checked by Members") }
            let origin = try Members(fields.value("origin"), path: "origin")
            for key in ["type", "table", "version", "origin"] { members[key] = nil }
            return .update(
                Update(
                    table: try fields.string("table"), version: try fields.version("version"),
                    originClient: try origin.string("client"), originRef: try origin.optionalString("ref"),
                    batch: try Batch(json: .object(members))))
        case "subscribed", "refreshed":
            let status = TableStatus(
                table: try fields.string("table"), version: try fields.version("version"), epoch: try fields.string("epoch"),
                rules: try fields.rules(), presence: try fields.optionalPresenceState("presence"))
            let ref = try fields.optionalString("ref")
            return type == "subscribed" ? .subscribed(ref: ref, status: status) : .refreshed(ref: ref, status: status)
        case "unsubscribed":
            return .unsubscribed(ref: try fields.optionalString("ref"), table: try fields.string("table"))
        case "tables":
            let tables = try (fields.optionalArray("tables") ?? []).enumerated().map {
                (index, value) throws(JSONDecodingError) -> TableSummary in
                let entry = try Members(value, path: "tables[\(index)]")
                return TableSummary(
                    table: try entry.string("table"), version: try entry.version("version"), epoch: try entry.string("epoch"),
                    subscribers: try entry.int("subscribers"))
            }
            return .tables(ref: try fields.optionalString("ref"), tables)
        case "presence":
            let left = try fields.array("left").enumerated().map { (index, value) throws(JSONDecodingError) -> String in
                guard case .string(let key) = value else {
                    throw JSONDecodingError(path: "left[\(index)]", message: "expected a string")
                }
                return key
            }
            return .presence(
                PresenceDelta(
                    table: try fields.string("table"), joined: try fields.presenceEntries("joined"),
                    changed: try fields.presenceEntries("changed"), left: left, viewers: try fields.int("viewers")))
        case "dropped":
            return .dropped(table: try fields.string("table"))
        case "rules":
            return .rules(table: try fields.string("table"), rules: try fields.rules())
        default:
            throw JSONDecodingError(path: "type", message: "unknown server message type '\(type)'")
        }
    }

    /// The `ref` the message answers, for the responses that carry one.
    public var ref: String? {
        switch self {
        case .welcome(let welcome): welcome.ref
        case .ack(let ack): ack.ref
        case .error(let error): error.ref
        case .subscribed(let ref, _), .refreshed(let ref, _), .unsubscribed(let ref, _), .tables(let ref, _): ref
        case .snapshot, .update, .presence, .dropped, .rules: nil
        }
    }
}

extension JSONDecodingError {
    fileprivate func nested(in prefix: String) -> JSONDecodingError {
        JSONDecodingError(path: path.isEmpty ? prefix : "\(prefix).\(path)", message: message)
    }
}

/// The members of a JSON object, read with errors that name the path.
private struct Members {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(JSONDecodingError) {
        guard case .object(let members) = value else {
            throw JSONDecodingError(path: path, message: "expected an object")
        }
        self.members = members
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ key: String) throws(JSONDecodingError) -> JSONValue {
        guard let value = members[key] else { throw JSONDecodingError(path: name(key), message: "missing") }
        return value
    }

    func string(_ key: String) throws(JSONDecodingError) -> String {
        guard let value = try optionalString(key) else { throw JSONDecodingError(path: name(key), message: "missing") }
        return value
    }

    func optionalString(_ key: String) throws(JSONDecodingError) -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw JSONDecodingError(path: name(key), message: "expected a string")
        }
    }

    func optionalBool(_ key: String) throws(JSONDecodingError) -> Bool? {
        switch members[key] {
        case nil: return nil
        case .bool(let value)?: return value
        default: throw JSONDecodingError(path: name(key), message: "expected true or false")
        }
    }

    func optionalArray(_ key: String) throws(JSONDecodingError) -> [JSONValue]? {
        switch members[key] {
        case nil: return nil
        case .array(let value)?: return value
        default: throw JSONDecodingError(path: name(key), message: "expected an array")
        }
    }

    func array(_ key: String) throws(JSONDecodingError) -> [JSONValue] {
        guard let value = try optionalArray(key) else { throw JSONDecodingError(path: name(key), message: "missing") }
        return value
    }

    func presenceEntries(_ key: String) throws(JSONDecodingError) -> [PresenceEntry] {
        try array(key).enumerated().map { (index, value) throws(JSONDecodingError) -> PresenceEntry in
            let entry = try Members(value, path: "\(name(key))[\(index)]")
            return PresenceEntry(
                key: try entry.string("key"), client: try entry.string("client"), name: try entry.string("name"),
                editing: try entry.optionalBool("editing") ?? false, row: try entry.optionalString("row"))
        }
    }

    func optionalPresenceState(_ key: String) throws(JSONDecodingError) -> PresenceState? {
        guard let value = members[key] else { return nil }
        let state = try Members(value, path: name(key))
        return PresenceState(
            you: try state.string("you"), clients: try state.presenceEntries("clients"), viewers: try state.int("viewers"))
    }

    func int(_ key: String) throws(JSONDecodingError) -> Int {
        guard case .number(let number) = try value(key), number >= 0, number <= 9_007_199_254_740_992,
            number.rounded(.towardZero) == number
        else { throw JSONDecodingError(path: name(key), message: "expected a non-negative integer") }
        return Int(number)
    }

    func version(_ key: String) throws(JSONDecodingError) -> UInt64 { UInt64(try int(key)) }

    func rules() throws(JSONDecodingError) -> TableRules {
        do throws(JSONDecodingError) { return try TableRules(json: value("rules")) } catch { throw error.nested(in: name("rules")) }
    }
}
