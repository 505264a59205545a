/// A client's view of one table that answers at once: the confirmed replica (what the server committed, in
/// version order, with history) plus the client's own intents that the server has not answered yet, applied on
/// top. Pure logic; the client feeds it the server's updates, acks and errors and sends what it says to send.
///
/// As in ShareDB, at most one request is in flight: it was sent with `base` = the confirmed version it was made
/// at, and the prediction applies it with ``TableEngine/resolve(_:base:)`` on the confirmed engine, the very
/// rebase the server runs, so both agree by construction. The others wait in a queue in id-anchored form
/// (``AnchoredIntent``), made from the predicted view, and are materialized against the prediction of everything
/// before them. When the answer comes, everything queued is sent as one request: each queued intent is
/// materialized in turn against the confirmed table plus those before it, and their net effect becomes one
/// `batch` with UIKit's index semantics at the confirmed version (see `OptimisticTable+Queue.swift`), so a burst
/// costs one round trip, not one per intent. What pending intents create carries provisional ids (`~1`, ...)
/// until the ack's `created` names the real ones.
///
/// Undo and redo are computed here too: every accepted intent records its inverse, in anchored form, from the
/// table before and after it; undoing materializes that inverse against the predicted view and submits it like
/// any intent.
public struct OptimisticTable: Sendable {
    /// How many intents may be pending (in flight plus queued) by default, e.g. while reconnecting.
    public static let defaultPendingLimit = 1_000

    /// An intent to send to the server: the local id (echo it into the request's ref bookkeeping), the intent
    /// and its base version. For queued intents sent as one batch, the id is the first one's.
    public struct Outgoing: Hashable, Sendable {
        /// The local id of the intent (the first of a batch of queued intents).
        public var id: Int
        /// The intent, in the coordinates of version `base`.
        public var intent: Intent
        /// The confirmed version the intent was made at.
        public var base: UInt64
    }

    /// What a submission did: its local id, and what to send now (nothing when another intent is in flight or
    /// when it changes nothing, which `settled` tells).
    public struct Submission: Hashable, Sendable {
        /// The local id of the intent.
        public var id: Int
        /// The intent to send now, if any.
        public var send: Outgoing?
        /// Whether the intent is already answered (it changes nothing, so there is nothing to send).
        public var settled: Bool
    }

    /// A pending intent that was refused, by the server or, for a queued one that no longer applies, locally.
    public struct Refusal: Hashable, Sendable {
        /// The local id of the intent.
        public var id: Int
        /// The intent as it was submitted.
        public var intent: Intent
        /// Why.
        public var error: TableError
    }

    /// What answering the in-flight request did: which intents are settled (accepted, or nothing to do), which
    /// were refused, and what to send next.
    public struct Outcome: Hashable, Sendable {
        /// Intents accepted, or that turned out to change nothing.
        public var accepted: [Int] = []
        /// Intents refused, in order.
        public var refused: [Refusal] = []
        /// The intents the server's answer is about (those the in-flight request carried), so that their callers
        /// get its ack or its error; the others in `accepted` and `refused` were settled here.
        public var answered: [Int] = []
        /// For each intent of an acknowledged batch of queued intents, its part of the ack (what the ack says is
        /// about the whole batch); empty when the answer is about one intent.
        public var shares: [Int: Share] = [:]
        /// The intent to send now, if any.
        public var send: Outgoing?
    }

    /// One intent's part of the ack of the batch it was sent in, as its own ack would say it: the ids of what it
    /// created (as the server assigned them; what a later intent of the batch deleted was never created) and
    /// where it put the sections and rows it inserted or moved (inserts first, then moves). When the batch did
    /// not land as the client expected (others' changes, retargeting), where they are once it is committed
    /// instead (one deleted since is left out), as the ack of a rebased intent says.
    public struct Share: Hashable, Sendable {
        /// The ids of what it created.
        public var created: [String] = []
        /// Where the sections it inserted, then moved, are.
        public var sections: [Int] = []
        /// Where the rows it inserted, then moved, are.
        public var rows: [RowPath] = []

        /// Creates a share.
        public init(created: [String] = [], sections: [Int] = [], rows: [RowPath] = []) {
            self.created = created
            self.sections = sections
            self.rows = rows
        }
    }

    enum Role: Sendable {
        case change, undo, redo
    }

    struct InFlight: Sendable {
        var outgoing: Outgoing
        /// The intents it carries, in submission order (one, or a queue sent as one batch).
        var members: [Queued]
        /// The provisional ids of what it creates, in the engine's order.
        var provisional: [String]
        /// Whether its own update arrived (the ack follows): the confirmed table holds it.
        var landed = false
    }

    struct Queued: Sendable {
        var id: Int
        var submitted: Intent
        var anchored: AnchoredIntent
        /// Whether it is sent on its own, never within a batch: it was in a batch the server refused.
        var solo = false
        /// Within a batch: where what it inserted or moved was right after it, and at the end of the batch, when
        /// the batch was made.
        var expected: (step: Share, final: Share)?
    }

    /// One undo or redo step: the inverse of the intent `source`.
    struct Step: Sendable {
        var source: Int
        var inverse: AnchoredIntent
    }

    /// The server's table, in version order, with the history that rebasing the in-flight intent needs.
    public private(set) var confirmed: TableEngine
    /// What the application shows: the confirmed table with the pending intents applied; what they create has
    /// provisional ids.
    public private(set) var predicted: Table
    /// The most intents that may be pending.
    public let pendingLimit: Int

    var inFlight: InFlight?
    var queue: [Queued] = []
    private var undoSteps: [Step] = []
    private var redoSteps: [Step] = []
    /// The prediction in the engine's ids (which it checks), and their map to the ids shown.
    private var scratch: TableEngine
    private var shownIDs: [String: String] = [:]
    private var nextLocalID = 1
    private var nextProvisional = 1

    /// Creates the view of a replica; nothing is pending.
    public init(confirmed: TableEngine, pendingLimit: Int = OptimisticTable.defaultPendingLimit) {
        self.confirmed = confirmed
        self.pendingLimit = pendingLimit
        predicted = confirmed.table
        scratch = TableEngine(table: confirmed.table, historyLimit: 0)
    }

    /// How many intents are pending (in flight plus queued).
    public var pendingCount: Int { queue.count + (inFlight?.members.count ?? 0) }

    /// The intent in flight, to send again after a reconnect (with the same ref).
    public var inFlightIntent: Outgoing? { inFlight?.outgoing }

    /// Whether there is a step to undo / to redo.
    public var canUndo: Bool { !undoSteps.isEmpty }
    public var canRedo: Bool { !redoSteps.isEmpty }

    /// Whether `id` is a provisional id, given to what a pending intent creates.
    public static func isProvisional(_ id: String) -> Bool { AnchoredIntent.isProvisional(id) }

    // MARK: Intents

    /// Submits `intent`, made against ``predicted`` (refs may carry its ids, provisional ones included): it is
    /// applied to the prediction at once, and either sent now (nothing else pending: `send`) or queued. Throws
    /// the engine's error when it cannot apply to the prediction (nothing changes then), and `limitExceeded` when
    /// ``pendingLimit`` intents are pending.
    public mutating func submit(_ intent: Intent) throws(TableError) -> Submission {
        try submit(intent, role: .change)
    }

    /// Undoes this client's last change still on the undo stack, by submitting its inverse made against the
    /// predicted view. `nil`: nothing to undo. Throws `conflict` naming why when the step no longer applies
    /// (someone deleted what it would restore or change); that step is dropped and nothing else changes.
    public mutating func undo() throws(TableError) -> Submission? {
        guard let step = undoSteps.popLast() else { return nil }
        return try submit(step, role: .undo)
    }

    /// Redoes the last undone step; like ``undo()``.
    public mutating func redo() throws(TableError) -> Submission? {
        guard let step = redoSteps.popLast() else { return nil }
        return try submit(step, role: .redo)
    }

    private mutating func submit(_ step: Step, role: Role) throws(TableError) -> Submission {
        let verb = role == .undo ? "undo" : "redo"
        do throws(TableError) {
            guard let intent = try step.inverse.materialize(on: predicted, strict: true) else {
                throw TableError(.conflict, at: nil, "nothing is left to change")
            }
            return try submit(intent, role: role)
        } catch {
            throw TableError(error.code, at: verb, "cannot \(verb): \(error.message)")
        }
    }

    private mutating func submit(_ intent: Intent, role: Role) throws(TableError) -> Submission {
        guard pendingCount < pendingLimit else {
            throw TableError(
                .limitExceeded, at: intent.name, "\(pendingLimit) intents are already waiting for the server")
        }
        let id = nextLocalID
        nextLocalID += 1
        let engineIntent = intent.withoutProvisionalIDs
        let resolution = try scratch.resolve(engineIntent)
        guard !resolution.isNoop else { return Submission(id: id, send: nil, settled: true) }
        var after = scratch
        try after.commit(resolution)
        let provisional = resolution.createdIDs.map { _ in newProvisionalID() }
        for (engineID, shown) in zip(resolution.createdIDs, provisional) { shownIDs[engineID] = shown }
        let before = predicted
        let batch = resolution.batch.renamingIDs(shownIDs)
        let afterShown = after.table.renamingIDs(shownIDs)
        let inverse = AnchoredIntent.inverse(
            batch, patches: resolution.patches, before: before, after: afterShown
        ) { newProvisionalID() }
        switch role {
        case .change:
            undoSteps.append(Step(source: id, inverse: inverse))
            redoSteps.removeAll()
        case .undo: redoSteps.append(Step(source: id, inverse: inverse))
        case .redo: undoSteps.append(Step(source: id, inverse: inverse))
        }
        scratch = after
        predicted = afterShown
        let queued = Queued(
            id: id, submitted: intent,
            anchored: .forward(batch, patches: resolution.patches, before: before, after: afterShown))
        if inFlight == nil && queue.isEmpty {
            // The prediction is the confirmed table: the intent is sent as made.
            let outgoing = Outgoing(id: id, intent: engineIntent, base: confirmed.table.version)
            inFlight = InFlight(outgoing: outgoing, members: [queued], provisional: provisional)
            return Submission(id: id, send: outgoing, settled: false)
        }
        queue.append(queued)
        return Submission(id: id, send: nil, settled: false)
    }

    private mutating func newProvisionalID() -> String {
        defer { nextProvisional += 1 }
        return "~\(nextProvisional)"
    }

    // MARK: The server's answers

    /// Applies a committed batch from the server to the confirmed table and predicts again. `own`: the update's
    /// origin is this client's in-flight intent (its ref), which the server sends before the ack; from then on
    /// the prediction no longer applies that intent, so it is never shown twice.
    public mutating func receive(_ batch: Batch, own: Bool = false) throws(TableError) {
        confirmed.alignIDs(to: batch)
        if own, let flight = inFlight, !flight.landed {
            let created = (try? confirmed.resolve(flight.outgoing.intent, base: flight.outgoing.base))?.createdIDs ?? []
            inFlight?.landed = true
            rename(Dictionary(zip(flight.provisional, created), uniquingKeysWith: { first, _ in first }))
        }
        try confirmed.apply(batch)
        predict()
    }

    /// Replaces the confirmed table (a fresh snapshot after a resubscribe) and predicts again; pending intents
    /// stay (the in-flight one is sent again with its ref, which the server answers once).
    public mutating func replaceConfirmed(with engine: TableEngine) {
        confirmed = engine
        predict()
    }

    /// Follows a change of the table's rules.
    public mutating func setRules(_ rules: TableRules) {
        confirmed.setRules(rules)
        predict()
    }

    /// The in-flight request was committed (`created`: the ids it assigned, as the ack lists them) or changed
    /// nothing: every intent it carries is accepted. Its provisional ids become the real ones everywhere, and
    /// what is queued is made against the confirmed table and returned to send, as one request.
    public mutating func acknowledge(created: [String]) -> Outcome {
        guard let flight = inFlight else { return Outcome() }
        inFlight = nil
        let aliases = Dictionary(zip(flight.provisional, created), uniquingKeysWith: { first, _ in first })
        rename(aliases)
        let ids = flight.members.map(\.id)
        var outcome = Outcome(accepted: ids, answered: ids)
        if flight.members.count > 1 { outcome.shares = shares(of: flight.members, aliases: aliases) }
        advance(&outcome)
        predict()
        return outcome
    }

    /// The in-flight request was refused. One intent is dropped with its undo step. A queue sent as one batch
    /// committed nothing, so none of its intents is refused for it: they go back to the head of the queue, to be
    /// sent one at a time, so that each is accepted or refused on its own (and only a refused one loses its undo
    /// step). Then what is queued is sent.
    public mutating func refuse(_ error: TableError) -> Outcome {
        guard let flight = inFlight else { return Outcome() }
        inFlight = nil
        var outcome = Outcome()
        if flight.members.count > 1 {
            var members = flight.members
            for index in members.indices { members[index].solo = true }
            queue.insert(contentsOf: members, at: 0)
        } else if let member = flight.members.first {
            dropSteps(of: member.id)
            outcome.refused = [Refusal(id: member.id, intent: member.submitted, error: error)]
            outcome.answered = [member.id]
        }
        advance(&outcome)
        predict()
        return outcome
    }

    mutating func dropSteps(of id: Int) {
        undoSteps.removeAll { $0.source == id }
        redoSteps.removeAll { $0.source == id }
    }

    /// Replaces provisional ids with real ones in everything that names them.
    private mutating func rename(_ aliases: [String: String]) {
        guard !aliases.isEmpty else { return }
        for index in queue.indices { queue[index].anchored = queue[index].anchored.renaming(aliases) }
        for index in undoSteps.indices { undoSteps[index].inverse = undoSteps[index].inverse.renaming(aliases) }
        for index in redoSteps.indices { redoSteps[index].inverse = redoSteps[index].inverse.renaming(aliases) }
    }

    /// Rebuilds the prediction: the in-flight request rebased by the engine onto the confirmed table, then every
    /// queued intent materialized against the prediction so far. One that does not apply is left out (it is
    /// refused or dropped when its turn to be sent comes). A batch of queued intents that no longer rebases will
    /// be refused and its intents sent again one at a time: meanwhile they are predicted one at a time too.
    private mutating func predict() {
        var engine = TableEngine(table: confirmed.table, historyLimit: 0)
        var shown: [String: String] = [:]
        var pending = queue
        if let flight = inFlight, !flight.landed {
            if let resolution = try? confirmed.resolve(flight.outgoing.intent, base: flight.outgoing.base),
                (try? engine.commit(resolution)) != nil
            {
                for (engineID, provisional) in zip(resolution.createdIDs, flight.provisional) {
                    shown[engineID] = provisional
                }
            } else if flight.members.count > 1 {
                pending = flight.members + queue
            }
        }
        for queued in pending {
            let view = engine.table.renamingIDs(shown)
            guard let intent = try? queued.anchored.materialize(on: view, strict: false),
                let resolution = try? engine.resolve(intent), (try? engine.commit(resolution)) != nil
            else { continue }
            for (engineID, provisional) in zip(resolution.createdIDs, queued.anchored.created) {
                shown[engineID] = provisional
            }
        }
        scratch = engine
        shownIDs = shown
        predicted = engine.table.renamingIDs(shown)
    }
}

extension Table {
    /// The table with row and section ids replaced through `ids` (the others kept).
    func renamingIDs(_ ids: [String: String]) -> Table {
        guard !ids.isEmpty else { return self }
        var table = self
        for s in table.sections.indices {
            if let id = ids[table.sections[s].id] { table.sections[s].id = id }
            for r in table.sections[s].rows.indices {
                if let id = ids[table.sections[s].rows[r].id] { table.sections[s].rows[r].id = id }
            }
        }
        return table
    }
}

extension Batch {
    /// The batch with the ids it assigns replaced through `ids`.
    func renamingIDs(_ ids: [String: String]) -> Batch {
        guard !ids.isEmpty else { return self }
        var batch = self
        for s in batch.insertSections.indices {
            if let id = ids[batch.insertSections[s].section.id] { batch.insertSections[s].section.id = id }
            for r in batch.insertSections[s].section.rows.indices {
                if let id = ids[batch.insertSections[s].section.rows[r].id] {
                    batch.insertSections[s].section.rows[r].id = id
                }
            }
        }
        for r in batch.insertRows.indices {
            if let id = ids[batch.insertRows[r].row.id] { batch.insertRows[r].row.id = id }
        }
        return batch
    }
}

extension Intent {
    /// The intent without the provisional ids its refs may carry (the engine checks ids, and knows only real
    /// ones; the paths say where the rows are).
    var withoutProvisionalIDs: Intent {
        func strip(_ ref: RowRef) -> RowRef {
            ref.id.map(AnchoredIntent.isProvisional) == true ? RowRef(ref.path) : ref
        }
        func strip(_ ref: SectionRef) -> SectionRef {
            ref.id.map(AnchoredIntent.isProvisional) == true ? SectionRef(ref.index) : ref
        }
        switch self {
        case .insert, .insertSection: return self
        case .delete(let ref): return .delete(strip(ref))
        case .move(let from, let to): return .move(from: strip(from), to: to)
        case .edit(let ref, let value, let editable, let movable, let editingStyle):
            return .edit(strip(ref), value: value, editable: editable, movable: movable, editingStyle: editingStyle)
        case .patch(let ref, let patch): return .patch(strip(ref), patch: patch)
        case .deleteSection(let ref): return .deleteSection(strip(ref))
        case .moveSection(let from, let to): return .moveSection(from: strip(from), to: to)
        case .editSection(let ref, let header, let footer, let rows):
            return .editSection(strip(ref), header: header, footer: footer, rows: rows)
        case .batch(var batch):
            batch.deleteSections = batch.deleteSections.map(strip)
            batch.reloadSections = batch.reloadSections.map {
                .init(section: strip($0.section), header: $0.header, footer: $0.footer, rows: $0.rows)
            }
            batch.moveSections = batch.moveSections.map { .init(from: strip($0.from), to: $0.to) }
            batch.deleteRows = batch.deleteRows.map(strip)
            batch.reloadRows = batch.reloadRows.map {
                .init(
                    row: strip($0.row), value: $0.value, editable: $0.editable, movable: $0.movable,
                    editingStyle: $0.editingStyle)
            }
            batch.moveRows = batch.moveRows.map { .init(from: strip($0.from), to: $0.to) }
            batch.patchRows = batch.patchRows.map { .init(row: strip($0.row), patch: $0.patch) }
            return .batch(batch)
        }
    }
}
