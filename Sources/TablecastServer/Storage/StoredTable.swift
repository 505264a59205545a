import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// One table as the store has it: what its actor reads and writes there besides commit groups, each through the
/// committer's connection, with a failure logged once and turned into what clients are told (``ServerContext/
/// unavailable(_:_:table:level:)``).
struct StoredTable: Sendable {
    let name: String
    let context: ServerContext

    /// The ack stored for `key`'s intent, if the store has one.
    func ack(for key: RefKey) async throws(ProtocolError) -> StoredAck? {
        do {
            return try await context.committer.perform {
                try $0.ack(client: key.owner.client, ref: key.ref, principal: key.owner.principal)
            }
        } catch {
            throw context.unavailable(
                "ref '\(key.ref)' could not be looked up, nothing was applied (send it again)", error, table: name)
        }
    }

    /// The updates of versions `since + 1 ... current` as the log has them; nil when it does not have them all, or
    /// could not be read (logged and counted: the client then gets a snapshot).
    func updates(after since: UInt64, upTo current: UInt64) async -> [WebSocketMessage]? {
        let name = name
        let entries: [LogEntry]
        do {
            entries = try await context.committer.perform { try $0.logEntries(name, after: Int64(since)) }
        } catch {
            context.logFailure(
                "could not read the log for a catch-up (a snapshot was sent instead)", error, table: name,
                level: .warning)
            return nil
        }
        guard entries.count == Int(current - since), entries.first?.version == Int64(since + 1) else { return nil }
        var messages: [WebSocketMessage] = []
        for entry in entries {
            guard let batch = try? Batch(json: JSONValue(parsing: entry.batch)) else {
                context.logger.error(
                    "a log entry does not decode", metadata: ["table": "\(name)", "version": "\(entry.version)"])
                return nil
            }
            let update = ServerMessage.Update(
                table: name, version: UInt64(entry.version), originClient: entry.originClient,
                originRef: entry.originRef, batch: batch)
            messages.append(WebSocketMessage(kind: .text, bytes: update.encoded))
        }
        return messages
    }

    /// The stored rules; nil when the store has no such table. A failed read is logged and counted (the next
    /// change of the rules, or a reload, brings them), and also answers nil.
    func rules() async -> TableRules? {
        let name = name
        do {
            guard let info = try await context.committer.perform({ try $0.table(name) }) else { return nil }
            return try TableRules(json: JSONValue(parsing: info.rules))
        } catch {
            context.logFailure("could not read another node's change of the rules", error, table: name)
            return nil
        }
    }

    /// Applies `patch` to the stored rules in the store's transaction; the rules as stored.
    func updateRules(_ patch: RulesPatch) async throws(ProtocolError) -> TableRules {
        let name = name
        do {
            let text = try await context.committer.perform { store in
                try store.updateRules(of: name) { stored in
                    patch.applied(to: try TableRules(json: JSONValue(parsing: stored))).json.jsonText
                }
            }
            return try TableRules(json: JSONValue(parsing: text))
        } catch {
            throw context.unavailable("the rules could not be stored", error, table: name)
        }
    }

    /// Removes the table's rows from the store.
    func drop() async throws(ProtocolError) {
        let name = name
        do {
            try await context.committer.perform { try $0.dropTable(name) }
        } catch {
            throw context.unavailable("the table could not be dropped", error, table: name)
        }
    }

    /// The table as stored, in an engine.
    func load() async throws(ProtocolError) -> TableEngine {
        let (name, historyLimit, historyBytes) = (name, context.historyLimit, context.historyBytes)
        do {
            return try await context.committer.perform { store in
                try TableEngine(loading: name, from: store, historyLimit: historyLimit, historyByteLimit: historyBytes)
            }
        } catch {
            throw context.unavailable(
                "table '\(name)' could not be reloaded after a storage failure", error, table: name, level: .critical)
        }
    }
}
