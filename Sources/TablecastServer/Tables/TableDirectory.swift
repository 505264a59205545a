import Synchronization
import TableModel
import TableStore
import TablecastProtocol

/// The tables by name. Creating and dropping go through here (each as a task of its own: the store refuses the
/// second of two creations of one name, and a drop waits in the table's actor for what was queued before it);
/// everything else goes straight to a table's actor.
final class TableDirectory: Sendable {
    private let context: ServerContext
    private let tables = Mutex<[String: TableActor]>([:])

    init(context: ServerContext, loaded: [TableActor]) {
        self.context = context
        tables.withLock { tables in
            for actor in loaded { tables[actor.name] = actor }
        }
        context.metrics.tables.record(loaded.count)
    }

    func actor(_ name: String) -> TableActor? {
        tables.withLock { $0[name] }
    }

    var all: [TableActor] {
        tables.withLock { Array($0.values) }
    }

    /// The `tables` listing, sorted by name, of the tables `visible` lets through.
    func summaries(visible: (String) -> Bool) -> [ServerMessage.TableSummary] {
        all.filter { visible($0.name) }.map(\.summary).sorted { $0.table < $1.table }
    }

    /// Creates a table at version 0; answers with its ack or an error.
    func create(_ name: String, sections: [SectionContent], rules patch: RulesPatch, ref: String?) async
        -> ServerMessage
    {
        guard actor(name) == nil else {
            return .error(ProtocolError(.tableExists, "table '\(name)' already exists", ref: ref))
        }
        let rules = patch.applied(to: TableRules())
        if let problem = Self.check(sections, against: rules) {
            var error = problem
            error.ref = ref
            return .error(error)
        }
        let table = Table(contents: sections, rules: rules)
        let epoch = Epoch.random()
        let (rulesText, snapshot) = (rules.json.jsonText, table.json.jsonText)
        do {
            try await context.committer.perform { store in
                try store.createTable(
                    name, epoch: epoch, rules: rulesText, snapshot: snapshot, created: ServerContext.now())
            }
        } catch let error as StoreError where error.kind == .tableExists {
            return .error(ProtocolError(.tableExists, "table '\(name)' already exists", ref: ref))
        } catch {
            var refusal = context.unavailable("the table could not be stored", error, table: name)
            refusal.ref = ref
            return .error(refusal)
        }
        let actor = TableActor(
            name: name, epoch: epoch, engine: context.engine(for: table),
            context: context)
        let count = tables.withLock { tables in
            tables[name] = actor
            return tables.count
        }
        context.metrics.tables.record(count)
        context.logger.info("table created", metadata: ["table": "\(name)"])
        return .ack(.init(ref: ref, table: name, version: 0, epoch: Epoch.text(epoch)))
    }

    /// Drops a table: its actor answers the requester and tells subscribers; then it leaves the directory.
    func drop(_ name: String, requester: Requester, ref: String?) async {
        guard let actor = actor(name) else {
            return context.send(
                .error(ProtocolError(.noSuchTable, "no table '\(name)'", ref: ref)), to: requester.connection)
        }
        let dropped = await withCheckedContinuation { done in actor.enqueue(.drop(requester, ref: ref, done: done)) }
        // A failed drop leaves the table in place.
        guard dropped else { return }
        let count = tables.withLock { tables in
            if tables[name] === actor { tables[name] = nil }
            return tables.count
        }
        context.logger.info("table dropped", metadata: ["table": "\(name)"])
        context.metrics.tables.record(count)
        context.metrics.forget(table: name)
        context.recentChanges.forget(name)
    }

    // MARK: Tables other nodes change (shared stores)

    /// The actor of table `name` as the store has it: the one held, or one loaded now for a table another node
    /// created (replacing one of an older life of the name). Nil when the store has no such table; throws when the
    /// store cannot be read (the table may well exist).
    func adopt(_ name: String) async throws -> TableActor? {
        let (historyLimit, historyBytes) = (context.historyLimit, context.historyBytes)
        let held = actor(name)
        let heldEpoch = held?.epoch
        // The engine is loaded only for a life of the table this node does not hold yet.
        let found = try await context.committer.perform { store -> (epoch: Int64, engine: TableEngine?)? in
            guard let info = try store.table(name) else { return nil }
            if info.epoch == heldEpoch { return (info.epoch, nil) }
            return (
                info.epoch,
                try TableEngine(loading: name, from: store, historyLimit: historyLimit, historyByteLimit: historyBytes)
            )
        }
        guard let (epoch, loaded) = found else { return nil }
        guard let engine = loaded else { return held }
        let (actor, replaced, count) = tables.withLock { tables -> (TableActor, TableActor?, Int) in
            if let held = tables[name], held.epoch == epoch { return (held, nil, tables.count) }
            let actor = TableActor(name: name, epoch: epoch, engine: engine, context: context)
            let replaced = tables.updateValue(actor, forKey: name)
            return (actor, replaced, tables.count)
        }
        replaced?.enqueue(.followStore(.dropped))
        context.logger.info("table loaded from the shared store", metadata: ["table": "\(name)"])
        context.metrics.tables.record(count)
        return actor
    }

    /// Adopts `name` on a task of its own, for another node's notification. A store that cannot be read is logged
    /// and counted; the next request for the table tries again.
    func adoptInBackground(_ name: String) {
        context.tasks.spawn { [self] in
            do {
                _ = try await adopt(name)
            } catch {
                context.logFailure("could not load a table another node created or changed", error, table: name)
            }
        }
    }

    /// Another node dropped table `name`.
    func forget(_ name: String) {
        let (removed, count) = tables.withLock { tables in (tables.removeValue(forKey: name), tables.count) }
        guard let removed else { return }
        removed.enqueue(.followStore(.dropped))
        context.metrics.tables.record(count)
        context.metrics.forget(table: name)
        context.recentChanges.forget(name)
        context.logger.info("table dropped on another node", metadata: ["table": "\(name)"])
    }

    /// Brings every table in line with the store after notifications may have been missed (the listener
    /// (re)connected): adopts new tables, forgets dropped ones, and has the others follow their log. Throws when
    /// the store cannot list the tables.
    func resync() async throws {
        let infos = try await context.committer.perform { try $0.listTables() }
        let names = Set(infos.map(\.name))
        for actor in all where !names.contains(actor.name) { forget(actor.name) }
        for info in infos {
            if let held = actor(info.name), held.epoch == info.epoch {
                held.followCommits(upTo: UInt64(info.version))
            } else {
                _ = try await adopt(info.name)
            }
        }
    }

    /// Checks initial content against the table's limits, as the engine would for an insert.
    static func check(_ sections: [SectionContent], against rules: TableRules) -> ProtocolError? {
        if sections.count > rules.maxSections {
            return ProtocolError(
                .limitExceeded, "createTable: \(sections.count) sections exceed the limit of \(rules.maxSections)",
                at: "sections")
        }
        for (s, section) in sections.enumerated() {
            if section.rows.count > rules.maxRowsPerSection {
                return ProtocolError(
                    .limitExceeded,
                    "createTable: section \(s) has \(section.rows.count) rows; the limit is \(rules.maxRowsPerSection)",
                    at: "sections[\(s)]")
            }
            for (r, row) in section.rows.enumerated() where row.value.encodedByteCount > rules.maxValueBytes {
                return ProtocolError(
                    .limitExceeded,
                    "createTable: the value of row \(r) of section \(s) is \(row.value.encodedByteCount) bytes; "
                        + "the limit is \(rules.maxValueBytes)", at: "sections[\(s)].rows[\(r)]")
            }
        }
        return nil
    }
}
