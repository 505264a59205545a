import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// What changes the table as a whole: its rules, its drop, and what other nodes did to it.
extension TableActor {
    /// What another node did: nothing is in flight or pending here (this is not an intent), so the engine is at
    /// the committed version.
    func follow(_ change: TableWork.StoreChange) async {
        guard !dropped else { return }
        switch change {
        case .commits(let version):
            if let version, version <= engine.table.version { return }
            await follow()
        case .rules:
            await followRules()
        case .dropped:
            forgetAfterDrop()
        case .presence:
            await followPresence()
        }
    }

    /// Reads the rules another node stored. A failed read is logged and counted; the next change of the rules, or
    /// a reload, brings them.
    private func followRules() async {
        let name = name
        let rules: TableRules
        do {
            guard let info = try await context.committer.perform({ try $0.table(name) }) else { return }
            rules = try TableRules(json: JSONValue(parsing: info.rules))
        } catch {
            context.logFailure("could not read another node's change of the rules", error, table: name)
            return
        }
        guard rules != engine.table.rules else { return }
        engine.setRules(rules)
        context.send(.rules(table: name, rules: rules), to: subscribers.ids)
    }

    func setRules(_ requester: Requester, ref: String?, _ patch: RulesPatch) async {
        // With a shared store this node may be behind on the table (nobody here subscribes) or on its rules (another
        // node's change not followed yet): the ack names a version followed here, and the patch applies to the
        // stored rules, in the store's transaction.
        await follow()
        let name = name
        let rules: TableRules
        do {
            let text = try await context.committer.perform { store in
                try store.updateRules(of: name) { stored in
                    patch.applied(to: try TableRules(json: JSONValue(parsing: stored))).json.jsonText
                }
            }
            rules = try TableRules(json: JSONValue(parsing: text))
        } catch {
            return refuse(requester, ref: ref, context.unavailable("the rules could not be stored", error, table: name))
        }
        engine.setRules(rules)
        context.send(.rules(table: name, rules: rules), to: subscribers.ids)
        context.send(
            .ack(.init(ref: ref, table: name, version: engine.table.version, epoch: epochText)),
            to: requester.connection)
    }

    func drop(_ requester: Requester, ref: String?) async -> Bool {
        // A broken table may still be dropped: its rows in the store are what dropping removes.
        guard !dropped else {
            refuse(requester, ref: ref, ProtocolError(.noSuchTable, "no table '\(name)'"))
            return false
        }
        let name = name
        do {
            try await context.committer.perform { try $0.dropTable(name) }
        } catch {
            refuse(requester, ref: ref, context.unavailable("the table could not be dropped", error, table: name))
            return false
        }
        forgetAfterDrop()
        context.send(
            .ack(.init(ref: ref, table: name, version: engine.table.version, epoch: epochText)),
            to: requester.connection)
        return true
    }

    /// The table is gone (dropped here or on another node): tells subscribers and refuses all later work.
    private func forgetAfterDrop() {
        dropped = true
        context.send(.dropped(table: name), to: subscribers.ids)
        context.metrics.subscribers.decrement(by: Double(subscribers.count))
        subscribers.removeAll()
        presence = PresenceBoard()
        otherNodesPresence = OtherNodesPresence()
        publishStatus()
    }
}
