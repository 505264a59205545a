/// Sending the queue: when the in-flight request is answered, everything queued goes as one request.
///
/// The queued intents are materialized in turn, the first against the confirmed table and each next one against
/// the confirmed table plus those before it, and applied by the engine (as sending them one by one without
/// concurrent changes would). Their net effect, from the confirmed table `C` to the table `T` they lead to, is one
/// batch at `C`'s version with UIKit's index semantics, by id: what `C` has and `T` lacks is deleted, what `T` has
/// and `C` lacks is inserted with its final content where `T` has it, what an intent moved is moved from where it
/// is in `C` to where it is in `T`, and a row or section of `C` whose value, flags, header or footer differ in `T`
/// is reloaded with them. That batch is checked by resolving it on `C` with the engine: only when it gives `T`
/// exactly is it sent; otherwise the first intent goes alone, as before. Since the batch is anchored at `C`'s
/// version like any intent, the server rebases it over what others commit meanwhile, and the prediction does the
/// same rebase.
///
/// A queued intent joins the batch only while that stays one valid batch: not after one that the engine refuses
/// on the table so far, and not when it would move what an earlier one reloads or the other way round (UIKit's
/// batch gives each row and section one role). A merge patch never joins (it would become a reload of the
/// value it merged to, overwriting what others patch meanwhile): it goes alone. The rest waits for the next
/// answer.
extension OptimisticTable {
    /// The rows and sections of the confirmed table that the intents combined so far move or reload.
    private struct Roles {
        var movedRows: Set<String> = []
        var reloadedRows: Set<String> = []
        var movedSections: Set<String> = []
        var reloadedSections: Set<String> = []
    }

    /// Makes what is queued the in-flight request; queued intents that no longer apply are refused here, those
    /// that change nothing any more are settled.
    mutating func advance(_ outcome: inout Outcome) {
        while inFlight == nil, !queue.isEmpty {
            let first = queue.removeFirst()
            let intent: Intent?
            do {
                intent = try first.anchored.materialize(on: confirmed.table, strict: false)
            } catch {
                dropSteps(of: first.id)
                outcome.refused.append(Refusal(id: first.id, intent: first.submitted, error: error))
                continue
            }
            guard let intent else {
                dropSteps(of: first.id)
                outcome.accepted.append(first.id)
                continue
            }
            let base = confirmed.table.version
            if !first.solo, let combined = combine(first, intent, &outcome) {
                if let batch = combined.intent {
                    let outgoing = Outgoing(id: first.id, intent: batch, base: base)
                    inFlight = InFlight(
                        outgoing: outgoing, members: combined.members, provisional: combined.provisional)
                    outcome.send = outgoing
                } else {
                    // Together they change nothing (a move and its way back): settled, as the server would.
                    outcome.accepted += combined.members.map(\.id)
                }
                continue
            }
            let outgoing = Outgoing(id: first.id, intent: intent, base: base)
            inFlight = InFlight(outgoing: outgoing, members: [first], provisional: first.anchored.created)
            outcome.send = outgoing
        }
    }

    /// Each of `members`' part of the ack of the batch they were sent in (see ``Share``), from the confirmed
    /// table, which holds the batch; `aliases`: the batch's provisional ids to the real ones. When the batch put
    /// an intent's sections and rows where it was expected to, the intent's part says where the intent itself
    /// put them (a `J` of ten moved its row one place, not ten: the server did not retarget it); otherwise it
    /// says where they are.
    func shares(of members: [Queued], aliases: [String: String]) -> [Int: Share] {
        var shares: [Int: Share] = [:]
        for member in members {
            var share = Self.placements(of: member.anchored, in: confirmed.table) { aliases[$0] ?? $0 }
            if let expected = member.expected, share == expected.final { share = expected.step }
            share.created = member.anchored.created.compactMap { aliases[$0] }
            shares[member.id] = share
        }
        return shares
    }

    /// Where the sections and rows `anchored` inserts or moves (ids through `name`) are in `table`: inserts then
    /// moves; one not there is left out.
    static func placements(of anchored: AnchoredIntent, in table: Table, name: (String) -> String = { $0 }) -> Share {
        var sectionIndex: [String: Int] = [:]
        var rowPath: [String: RowPath] = [:]
        for (s, section) in table.sections.enumerated() {
            sectionIndex[section.id] = s
            for (r, row) in section.rows.enumerated() { rowPath[row.id] = RowPath(section: s, row: r) }
        }
        return Share(
            sections: (anchored.insertSections.map(\.id) + anchored.moveSections.map(\.id)).compactMap {
                sectionIndex[name($0)]
            },
            rows: (anchored.insertRows.map(\.id) + anchored.moveRows.map(\.id)).compactMap { rowPath[name($0)] })
    }

    /// `first` (materialized as `intent`) and the queued intents after it that combine with it, as one checked
    /// intent (`nil` when together they change nothing), taken off the queue; `nil` when no other intent joins
    /// it or the combination does not check out (then the queue is as it was).
    private mutating func combine(_ first: Queued, _ intent: Intent, _ outcome: inout Outcome) -> (
        intent: Intent?, members: [Queued], provisional: [String]
    )? {
        guard let next = queue.first, !next.solo else { return nil }
        let start = confirmed.table
        var engine = TableEngine(table: start, historyLimit: 0)
        var shown: [String: String] = [:]
        var roles = Roles()
        let original = Set(start.sections.flatMap { [$0.id] + $0.rows.map(\.id) })
        guard Self.extend(&engine, &shown, &roles, original, with: intent, creating: first.anchored.created) else {
            return nil
        }
        var steps = [Self.placements(of: first.anchored, in: engine.table.renamingIDs(shown))]
        var members = [first]
        var settled: [Int] = []
        while let next = queue.first, !next.solo {
            let view = engine.table.renamingIDs(shown)
            let materialized: Intent?
            do { materialized = try next.anchored.materialize(on: view, strict: false) } catch { break }
            guard let intent = materialized else {
                // Nothing left to do, whatever comes before it: settled as when its turn came alone.
                queue.removeFirst()
                dropSteps(of: next.id)
                settled.append(next.id)
                continue
            }
            guard Self.extend(&engine, &shown, &roles, original, with: intent, creating: next.anchored.created)
            else { break }
            steps.append(Self.placements(of: next.anchored, in: engine.table.renamingIDs(shown)))
            members.append(queue.removeFirst())
        }
        outcome.accepted += settled
        let target = engine.table.renamingIDs(shown)
        guard members.count > 1, let (batch, provisional) = Self.batch(from: start, to: target, roles),
            Self.check(batch, on: start, gives: target, provisional: provisional)
        else {
            queue.insert(contentsOf: members.dropFirst(), at: 0)
            return nil
        }
        for index in members.indices {
            members[index].expected = (steps[index], Self.placements(of: members[index].anchored, in: target))
        }
        return (AnchoredIntent.intent(batch), members, provisional)
    }

    /// Applies `intent` to `engine` (what it creates shown as `created`) and records what it moves and reloads;
    /// false, with nothing changed, when the engine refuses it or it would give something of `original` a second
    /// role in the combined batch.
    private static func extend(
        _ engine: inout TableEngine, _ shown: inout [String: String], _ roles: inout Roles, _ original: Set<String>,
        with intent: Intent, creating created: [String]
    ) -> Bool {
        let before = engine.table
        // A merge patch goes alone: in a batch it would become the value it merged to, overwriting what others
        // patch meanwhile.
        guard let resolution = try? engine.resolve(intent), resolution.patches.isEmpty else { return false }
        func name(_ id: String) -> String { shown[id] ?? id }
        func rowID(_ path: RowPath) -> String { name(before.sections[path.section].rows[path.row].id) }
        let batch = resolution.batch
        let movedRows = Set(batch.moveRows.map { rowID($0.from) }).intersection(original)
        let reloadedRows = Set(batch.reloadRows.map { rowID($0.at) }).intersection(original)
        let movedSections = Set(batch.moveSections.map { name(before.sections[$0.from].id) }).intersection(original)
        let reloadedSections = Set(batch.reloadSections.map { name(before.sections[$0.at].id) })
            .intersection(original)
        guard roles.movedRows.isDisjoint(with: reloadedRows), roles.reloadedRows.isDisjoint(with: movedRows),
            roles.movedSections.isDisjoint(with: reloadedSections),
            roles.reloadedSections.isDisjoint(with: movedSections),
            (try? engine.commit(resolution)) != nil
        else { return false }
        for (engineID, provisional) in zip(resolution.createdIDs, created) { shown[engineID] = provisional }
        roles.movedRows.formUnion(movedRows)
        roles.reloadedRows.formUnion(reloadedRows)
        roles.movedSections.formUnion(movedSections)
        roles.reloadedSections.formUnion(reloadedSections)
        return true
    }

    /// The batch at `start`'s version that turns `start` into `target` (ids as shown), moving what `roles` says
    /// was moved, and the ids it creates in the engine's order (all provisional); nil when a row of a deleted
    /// section survives or an inserted section holds a row that was there before (left to separate requests).
    private static func batch(from start: Table, to target: Table, _ roles: Roles) -> (ClientBatch, [String])? {
        var targetSection: [String: Int] = [:]
        var targetRow: [String: RowPath] = [:]
        for (s, section) in target.sections.enumerated() {
            targetSection[section.id] = s
            for (r, row) in section.rows.enumerated() { targetRow[row.id] = RowPath(section: s, row: r) }
        }
        var batch = ClientBatch()
        var kept: Set<String> = []
        for (s, section) in start.sections.enumerated() {
            let ref = SectionRef(s, id: section.id)
            guard let t = targetSection[section.id] else {
                if section.rows.contains(where: { targetRow[$0.id] != nil }) { return nil }
                batch.deleteSections.append(ref)
                continue
            }
            if roles.movedSections.contains(section.id) { batch.moveSections.append(.init(from: ref, to: t)) }
            let now = target.sections[t]
            if now.header != section.header || now.footer != section.footer {
                batch.reloadSections.append(.init(section: ref, header: .some(now.header), footer: .some(now.footer)))
            }
            for (r, row) in section.rows.enumerated() {
                let ref = RowRef(RowPath(section: s, row: r), id: row.id)
                guard let path = targetRow[row.id] else {
                    batch.deleteRows.append(ref)
                    continue
                }
                kept.insert(row.id)
                if roles.movedRows.contains(row.id) { batch.moveRows.append(.init(from: ref, to: path)) }
                let now = target.sections[path.section].rows[path.row]
                if now.content != row.content {
                    batch.reloadRows.append(
                        .init(
                            row: ref, value: now.value, editable: now.editable == row.editable ? nil : now.editable,
                            movable: now.movable == row.movable ? nil : now.movable,
                            editingStyle: now.editingStyle == row.editingStyle ? nil : now.editingStyle))
                }
            }
        }
        var createdSections: [String] = []
        var createdRows: [String] = []
        let startSections = Set(start.sections.map(\.id))
        for (t, section) in target.sections.enumerated() {
            guard startSections.contains(section.id) else {
                if section.rows.contains(where: { kept.contains($0.id) }) { return nil }
                batch.insertSections.append(.init(at: t, section: section.content))
                createdSections += [section.id] + section.rows.map(\.id)
                continue
            }
            for (r, row) in section.rows.enumerated() where !kept.contains(row.id) {
                batch.insertRows.append(.init(at: RowPath(section: t, row: r), row: row.content))
                createdRows.append(row.id)
            }
        }
        return (batch, createdSections + createdRows)
    }

    /// Whether the engine, resolving `batch` on `start`, gives `target` (what it creates named `provisional`).
    private static func check(_ batch: ClientBatch, on start: Table, gives target: Table, provisional: [String])
        -> Bool
    {
        var engine = TableEngine(table: start, historyLimit: 0)
        guard let intent = AnchoredIntent.intent(batch) else { return start.sections == target.sections }
        guard let resolution = try? engine.resolve(intent), (try? engine.commit(resolution)) != nil else {
            return false
        }
        let names = Dictionary(zip(resolution.createdIDs, provisional), uniquingKeysWith: { first, _ in first })
        return engine.table.renamingIDs(names).sections == target.sections
    }
}
