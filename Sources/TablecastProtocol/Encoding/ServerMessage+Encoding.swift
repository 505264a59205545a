import TableModel

extension ServerMessage {
    /// The message as a JSON value, in the shapes web-client-protocol/ specifies.
    public var json: JSONValue {
        var members: [String: JSONValue]
        switch self {
        case .welcome(let welcome):
            members = [
                "type": "welcome", "client": .string(welcome.client),
                "server": [
                    "name": .string(welcome.serverName), "version": .string(welcome.serverVersion), "protocol": 1,
                ],
                "limits": [
                    "maxMessageBytes": .number(Double(welcome.maxMessageBytes)),
                    "maxBatchEntries": .number(Double(welcome.maxBatchEntries)),
                    "intentsPerSecond": .number(Double(welcome.intentsPerSecond)),
                ],
            ]
            members["ref"] = welcome.ref.map(JSONValue.string)
        case .ack(let ack):
            members = ["type": "ack", "table": .string(ack.table), "version": .number(Double(ack.version))]
            members["ref"] = ack.ref.map(JSONValue.string)
            members["epoch"] = ack.epoch.map(JSONValue.string)
            if !ack.created.isEmpty { members["created"] = .array(ack.created.map(JSONValue.string)) }
            if !ack.resolved.isEmpty { members["resolved"] = .array(ack.resolved) }
            if ack.noop { members["noop"] = true }
        case .error(let error):
            members = ["type": "error", "code": .string(error.code.rawValue), "message": .string(error.message)]
            members["ref"] = error.ref.map(JSONValue.string)
            members["at"] = error.at.map(JSONValue.string)
        case .snapshot(let table, let version, let epoch, let rules, let sections):
            members = [
                "type": "snapshot", "table": .string(table), "version": .number(Double(version)),
                "epoch": .string(epoch), "rules": rules.json, "sections": .array(sections.map(\.json)),
            ]
        case .update(let update):
            guard case .object(let lists) = update.batch.json else {
                preconditionFailure("a batch encodes as an object")
            }
            members = lists
            members["type"] = "update"
            members["table"] = .string(update.table)
            members["version"] = .number(Double(update.version))
            var origin: [String: JSONValue] = ["client": .string(update.originClient)]
            origin["ref"] = update.originRef.map(JSONValue.string)
            members["origin"] = .object(origin)
        case .subscribed(let ref, let status), .refreshed(let ref, let status):
            if case .subscribed = self { members = ["type": "subscribed"] } else { members = ["type": "refreshed"] }
            members["ref"] = ref.map(JSONValue.string)
            members["table"] = .string(status.table)
            members["version"] = .number(Double(status.version))
            members["epoch"] = .string(status.epoch)
            members["rules"] = status.rules.json
            members["presence"] = status.presence?.json
        case .unsubscribed(let ref, let table, let reason):
            members = ["type": "unsubscribed", "table": .string(table)]
            members["ref"] = ref.map(JSONValue.string)
            members["reason"] = reason.map(JSONValue.string)
        case .tokenRefreshed(let ref, let expires):
            members = ["type": "ack"]
            members["ref"] = ref.map(JSONValue.string)
            members["expires"] = expires.map(JSONValue.number)
        case .tables(let ref, let tables):
            members = [
                "type": "tables",
                "tables": .array(
                    tables.map {
                        [
                            "table": .string($0.table), "version": .number(Double($0.version)),
                            "epoch": .string($0.epoch), "subscribers": .number(Double($0.subscribers)),
                        ]
                    }),
            ]
            members["ref"] = ref.map(JSONValue.string)
        case .presence(let delta):
            members = [
                "type": "presence", "table": .string(delta.table), "joined": .array(delta.joined.map(\.json)),
                "changed": .array(delta.changed.map(\.json)), "left": .array(delta.left.map(JSONValue.string)),
                "viewers": .number(Double(delta.viewers)),
            ]
        case .dropped(let table):
            members = ["type": "dropped", "table": .string(table)]
        case .rules(let table, let rules):
            members = ["type": "rules", "table": .string(table), "rules": rules.json]
        case .historicalSnapshot(let ref, let table, let version, let epoch, let rules, let sections):
            members = [
                "type": "snapshot", "table": .string(table), "version": .number(Double(version)),
                "epoch": .string(epoch), "rules": rules.json, "sections": .array(sections.map(\.json)),
                "historical": true,
            ]
            members["ref"] = ref.map(JSONValue.string)
        case .changes(let changes):
            members = [
                "type": "changes", "table": .string(changes.table), "epoch": .string(changes.epoch),
                "version": .number(Double(changes.version)), "oldest": .number(Double(changes.oldest)),
                "entries": .array(changes.entries.map(\.json)),
            ]
            members["ref"] = changes.ref.map(JSONValue.string)
            members["next"] = changes.next.map { .number(Double($0)) }
        }
        return .object(members)
    }

    /// The message's text as UTF-8 bytes, ready to send. The two messages of every committed intent, `update`
    /// and `ack`, are written directly; the others go through ``json``.
    public var encoded: [UInt8] {
        switch self {
        case .update(let update): update.encoded
        case .ack(let ack): ack.encoded
        case .presence(let delta): delta.encoded
        case .subscribed(let ref, let status) where status.presence != nil:
            status.encoded(
                type: "subscribed", ref: ref, you: status.presence!.you, sharedPresence: status.presence!.sharedJSON)
        case .refreshed(let ref, let status) where status.presence != nil:
            status.encoded(
                type: "refreshed", ref: ref, you: status.presence!.you, sharedPresence: status.presence!.sharedJSON)
        case .historicalSnapshot(let ref, let table, let version, let epoch, let rules, let sections):
            Self.historicalSnapshot(
                ref: ref, table: table, version: version, epoch: epoch, rules: rules, sections: sections)
        default: json.jsonBytes
        }
    }
}

extension ServerMessage {
    /// A historical `snapshot`'s text, members sorted as ``json`` has them: ``HistoricalSnapshotEncoding``'s head for
    /// `ref` followed by its shared part.
    static func historicalSnapshot(
        ref: String?, table: String, version: UInt64, epoch: String, rules: TableRules, sections: [Section]
    ) -> [UInt8] {
        let encoding = HistoricalSnapshotEncoding(
            table: table, version: version, epoch: epoch, rules: rules, sections: sections)
        return encoding.head(ref: ref) + encoding.shared
    }
}

/// A historical `snapshot` written once for every request of one table at one version: the members up to `ref` are
/// the ``head(ref:)`` of each request, and everything after it (the table's sections, possibly megabytes) is
/// ``shared``, so a server can send the same buffer behind each request's head. Written directly, not built as a
/// tree first: a past table is rebuilt for the request.
public struct HistoricalSnapshotEncoding: Sendable {
    /// The members after `ref`, to the end of the object: the same for every request.
    public let shared: [UInt8]
    private let epoch: String

    public init(table: String, version: UInt64, epoch: String, rules: TableRules, sections: [Section]) {
        self.epoch = epoch
        var writer = JSONWriter(capacity: 4096)
        writer.key("rules")
        writer.value(rules.json)
        writer.key("sections")
        writer.beginArray()
        for section in sections { section.write(to: &writer) }
        writer.endArray()
        writer.key("table")
        writer.string(table)
        writer.key("type")
        writer.string("snapshot")
        writer.key("version")
        writer.integer(version)
        writer.endObject()
        shared = writer.bytes
    }

    /// The members before ``shared`` for the request `ref`: `{"epoch":…,"historical":true,"ref":…,`.
    public func head(ref: String?) -> [UInt8] { Self.head(epoch: epoch, ref: ref) }

    /// The head of a historical snapshot of a table in `epoch` for the request `ref`, whatever its version.
    public static func head(epoch: String, ref: String?) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("epoch")
        writer.string(epoch)
        writer.key("historical")
        writer.bool(true)
        if let ref {
            writer.key("ref")
            writer.string(ref)
        }
        return writer.bytes + Array(",".utf8)
    }
}

extension ServerMessage.Update {
    /// The `update` message's text: type, table, version and origin first, then the batch's lists.
    public var encoded: [UInt8] {
        var writer = JSONWriter(capacity: batch.estimatedByteCount + 128)
        writeHead(to: &writer)
        batch.writeMembers(to: &writer)
        writer.endObject()
        return writer.bytes
    }

    /// The same text with the batch already written as `batchJSON` (its ``TableModel/Batch/jsonBytes``): the
    /// server writes each committed batch once, for the log and for the update.
    public func encoded(batchJSON: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: batchJSON.count + 128)
        writeHead(to: &writer)
        writer.members(ofObject: batchJSON)
        writer.endObject()
        return writer.bytes
    }

    /// Opens the object and writes the members before the batch's.
    private func writeHead(to writer: inout JSONWriter) {
        writer.beginObject(firstKey: "type")
        writer.string("update")
        writer.key("table")
        writer.string(table)
        writer.key("version")
        writer.integer(version)
        writer.key("origin")
        writer.beginObject(firstKey: "client")
        writer.string(originClient)
        if let originRef {
            writer.key("ref")
            writer.string(originRef)
        }
        writer.endObject()
    }
}

extension ServerMessage.HistoryEntry {
    /// The entry as `changes` lists it: version, time and origin, then the batch's eight lists as in `update`.
    public var json: JSONValue {
        guard case .object(var members) = batch.json else { preconditionFailure("a batch encodes as an object") }
        members["version"] = .number(Double(version))
        members["time"] = .number(Double(time))
        var origin: [String: JSONValue] = ["client": .string(originClient)]
        origin["name"] = originName.map(JSONValue.string)
        origin["ref"] = originRef.map(JSONValue.string)
        origin["user"] = originUser.map(JSONValue.string)
        members["origin"] = .object(origin)
        return .object(members)
    }
}

extension ServerMessage.Ack {
    /// The `ack` message's text, members sorted as ``ServerMessage/json`` has them.
    public var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        if !created.isEmpty {
            writer.key("created")
            writer.beginArray()
            for id in created { writer.string(id) }
            writer.endArray()
        }
        if let epoch {
            writer.key("epoch")
            writer.string(epoch)
        }
        if noop {
            writer.key("noop")
            writer.bool(true)
        }
        if let ref {
            writer.key("ref")
            writer.string(ref)
        }
        if !resolved.isEmpty {
            writer.key("resolved")
            writer.value(.array(resolved))
        }
        writer.key("table")
        writer.string(table)
        writer.key("type")
        writer.string("ack")
        writer.key("version")
        writer.integer(version)
        writer.endObject()
        return writer.bytes
    }
}

extension ServerMessage.TableStatus {
    /// The text of `subscribed` or `refreshed` (`type`) for the connection whose presence key is `you`, with the
    /// presence state written earlier as `sharedPresence` (``PresenceState/sharedJSON(clients:viewers:)``; the
    /// ``presence`` member is not read): a server writes a table's presence once for everyone who catches up until
    /// it changes. Members sorted, as ``ServerMessage/json`` has them.
    public func encoded(type: StaticString, ref: String?, you: String, sharedPresence: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: sharedPresence.count + 320)
        writer.beginObject()
        writer.key("epoch")
        writer.string(epoch)
        writer.key("presence")
        writer.beginObject()
        writer.members(ofObject: sharedPresence)
        writer.key("you")
        writer.string(you)
        writer.endObject()
        if let ref {
            writer.key("ref")
            writer.string(ref)
        }
        writer.key("rules")
        writer.value(rules.json)
        writer.key("table")
        writer.string(table)
        writer.key("type")
        writer.string(String(describing: type))
        writer.key("version")
        writer.integer(version)
        writer.endObject()
        return writer.bytes
    }
}

extension PresenceEntry {
    /// The entry as the protocol writes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "key": .string(key), "client": .string(client), "name": .string(name), "editing": .bool(editing),
        ]
        members["row"] = row.map(JSONValue.string)
        members["user"] = user.map(JSONValue.string)
        return .object(members)
    }

    /// Writes the entry, members sorted.
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("client")
        writer.string(client)
        writer.key("editing")
        writer.bool(editing)
        writer.key("key")
        writer.string(key)
        writer.key("name")
        writer.string(name)
        if let row {
            writer.key("row")
            writer.string(row)
        }
        if let user {
            writer.key("user")
            writer.string(user)
        }
        writer.endObject()
    }
}

extension PresenceState {
    /// The state as the protocol writes it (`presence` of `subscribed` and `refreshed`).
    public var json: JSONValue {
        ["clients": .array(clients.map(\.json)), "viewers": .number(Double(viewers)), "you": .string(you)]
    }

    /// The state without `you`: what every connection that catches up shares.
    public var sharedJSON: [UInt8] { Self.sharedJSON(clients: clients, viewers: viewers) }

    /// `{"clients":[…],"viewers":N}`, the part of a table's presence state every receiver shares.
    public static func sharedJSON(clients: some Collection<PresenceEntry>, viewers: Int) -> [UInt8] {
        var writer = JSONWriter(capacity: 32 + 80 * clients.count)
        writer.beginObject()
        writer.key("clients")
        writer.beginArray()
        for entry in clients { entry.write(to: &writer) }
        writer.endArray()
        writer.key("viewers")
        writer.integer(viewers)
        writer.endObject()
        return writer.bytes
    }
}

extension PresenceDelta {
    /// The `presence` message's text, `type` first so that a client that ignores presence recognizes it from its
    /// first bytes.
    public var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 96 + 80 * (joined.count + changed.count) + 16 * left.count)
        writer.beginObject()
        writer.key("type")
        writer.string("presence")
        writer.key("table")
        writer.string(table)
        writer.key("joined")
        writer.beginArray()
        for entry in joined { entry.write(to: &writer) }
        writer.endArray()
        writer.key("changed")
        writer.beginArray()
        for entry in changed { entry.write(to: &writer) }
        writer.endArray()
        writer.key("left")
        writer.beginArray()
        for key in left { writer.string(key) }
        writer.endArray()
        writer.key("viewers")
        writer.integer(viewers)
        writer.endObject()
        return writer.bytes
    }
}
