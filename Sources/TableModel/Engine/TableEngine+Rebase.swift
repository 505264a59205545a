extension TableEngine {
    /// Translates a client batch made at version `base` into the current table's coordinates by carrying every
    /// reference and position through the batches committed since:
    ///
    /// - a row or section is followed by its index path (and its id, when given, is checked against where it
    ///   ends up); if it was deleted since, that is a `conflict`, except that deleting an already deleted row is
    ///   dropped as a no-op;
    /// - an insertion position or move destination is a gap that stays right after the row (or section) that
    ///   preceded it at `base`, or after that one's nearest surviving predecessor; whatever was committed into the
    ///   same gap meanwhile stays before it, so insertions into one gap keep commit order.
    func rebase(
        _ client: ClientBatch, intent: Intent, from base: UInt64, through entries: HistoryLog.Suffix
    ) throws(TableError) -> Draft {
        let label = intent.label
        try rejectNegativeIndices(client, intent: intent)
        var draft = Draft()

        // References to what existed at base.
        func section(_ ref: SectionRef, _ entry: String) throws(TableError) -> Int {
            var index = ref.index
            for history in entries {
                guard let next = history.layout.finalSection(ofOld: index) else {
                    throw .conflict(entry, "section \(ref.index) of version \(base) has been deleted since")
                }
                index = next
            }
            if let id = ref.id, table.sections.indices.contains(index), table.sections[index].id != id {
                throw .conflict(
                    entry,
                    "section \(ref.index) of version \(base) is now section \(index), which is \(table.sections[index].id), not \(id)"
                )
            }
            return index
        }
        func row(_ ref: RowRef, _ entry: String, deleting: Bool) throws(TableError) -> RowPath? {
            var path = ref.path
            for history in entries {
                switch history.layout.fate(of: path) {
                case .at(let next): path = next
                case .deleted:
                    if let id = ref.id, let deleted = history.deletedRowIDs[path], deleted != id {
                        throw .conflict(entry, "row \(ref.path) of version \(base) was \(deleted), not \(id)")
                    }
                    if deleting { return nil }
                    throw .conflict(entry, "row \(ref.path) of version \(base) has been deleted since")
                case .sectionDeleted:
                    if deleting { return nil }
                    throw .conflict(
                        entry, "row \(ref.path) of version \(base) is in a section that has been deleted since")
                }
            }
            if let id = ref.id, let current = table.row(at: path), current.id != id {
                throw .conflict(
                    entry, "row \(ref.path) of version \(base) is now row \(path), which is \(current.id), not \(id)")
            }
            return path
        }
        for (index, ref) in client.deleteSections.enumerated() {
            draft.deleteSections.append((try section(ref, label(.deleteSections, index)), index))
        }
        for (index, reload) in client.reloadSections.enumerated() {
            draft.reloadSections.append(
                (
                    try section(reload.section, label(.reloadSections, index)), reload.header, reload.footer,
                    reload.rows, index
                ))
        }
        for (index, move) in client.moveSections.enumerated() {
            draft.moveSections.append((try section(move.from, label(.moveSections, index)), 0, index))
        }
        for (index, ref) in client.deleteRows.enumerated() {
            if let path = try row(ref, label(.deleteRows, index), deleting: true) {
                draft.deleteRows.append((path, index))
            }
        }
        for (index, reload) in client.reloadRows.enumerated() {
            let path = try row(reload.row, label(.reloadRows, index), deleting: false)!
            draft.reloadRows.append((path, reload.value, reload.editable, reload.movable, reload.editingStyle, index))
        }
        for (index, patch) in client.patchRows.enumerated() {
            let path = try row(patch.row, label(.patchRows, index), deleting: false)!
            draft.patchRows.append((path, patch.patch, index))
        }
        for (index, move) in client.moveRows.enumerated() {
            draft.moveRows.append(
                (try row(move.from, label(.moveRows, index), deleting: false)!, RowPath(section: 0, row: 0), index))
        }

        draft.insertSections = client.insertSections.enumerated().map { (0, $1.section, $0) }
        draft.insertRows = client.insertRows.enumerated().map { (RowPath(section: 0, row: 0), $1.row, $0) }

        // Section positions: the client's final index → a gap at base → a gap now → a final index now.
        let clientSections = Reindexing(
            removed: (client.deleteSections.map(\.index) + client.moveSections.map(\.from.index)).sorted(),
            placed: (client.insertSections.map(\.at) + client.moveSections.map(\.to)).sorted())
        var sectionPlacements: [(gap: Int, clientFinal: Int, insert: Int?, move: Int?)] = []
        for (index, insert) in client.insertSections.enumerated() {
            sectionPlacements.append(
                (sectionGap(clientSections, final: insert.at, through: entries), insert.at, index, nil))
        }
        for (index, move) in client.moveSections.enumerated() {
            sectionPlacements.append(
                (sectionGap(clientSections, final: move.to, through: entries), move.to, nil, index))
        }
        let draftRemovedSections = (draft.deleteSections.map(\.index) + draft.moveSections.map(\.from)).sorted()
        for (rank, placement) in Self.ranked(
            sectionPlacements.map { ($0.gap - draftRemovedSections.countLess(than: $0.gap), $0.clientFinal) }
        ).enumerated() {
            let item = sectionPlacements[placement.item]
            if let insert = item.insert { draft.insertSections[insert].at = placement.survivorsBefore + rank }
            if let move = item.move { draft.moveSections[move].to = placement.survivorsBefore + rank }
        }

        // Row positions: the client's final index path → a gap in a section at base → a gap now → a final index
        // path now. Rows placed into a section the batch itself inserts keep their index within it.
        var clientRowsRemoved: [Int: [Int]] = [:]
        for ref in client.deleteRows { clientRowsRemoved[ref.path.section, default: []].append(ref.path.row) }
        for move in client.moveRows {
            clientRowsRemoved[move.from.path.section, default: []].append(move.from.path.row)
        }
        var clientRowsPlaced: [Int: [Int]] = [:]
        for insert in client.insertRows { clientRowsPlaced[insert.at.section, default: []].append(insert.at.row) }
        for move in client.moveRows { clientRowsPlaced[move.to.section, default: []].append(move.to.row) }
        let insertedSection = Dictionary(
            client.insertSections.enumerated().map { ($1.at, $0) }, uniquingKeysWith: { first, _ in first })
        let movedSection = Dictionary(
            client.moveSections.enumerated().map { ($1.to, $0) }, uniquingKeysWith: { first, _ in first })

        /// Where a placement goes now: into a section this batch inserts (row kept), or a gap in a current section.
        enum Target {
            case newSection(insert: Int, row: Int)
            case gap(section: Int, gap: Int, clientRow: Int)
        }
        func target(_ at: RowPath, _ entry: String) throws(TableError) -> Target {
            if let insert = insertedSection[at.section] { return .newSection(insert: insert, row: at.row) }
            let baseSection =
                movedSection[at.section].map { client.moveSections[$0].from.index }
                ?? clientSections.oldIndex(ofSurvivor: clientSections.survivorsBefore(final: at.section))
            let clientRows = Reindexing(
                removed: (clientRowsRemoved[baseSection] ?? []).sorted(),
                placed: (clientRowsPlaced[at.section] ?? []).sorted())
            var position = RowPath(section: baseSection, row: Self.gap(clientRows, final: at.row))
            for history in entries {
                guard let next = history.layout.finalRowGap(section: position.section, gap: position.row) else {
                    throw .conflict(
                        entry, "position \(at) of version \(base) is in a section that has been deleted since")
                }
                position = next
            }
            return .gap(section: position.section, gap: position.row, clientRow: at.row)
        }
        var targets: [(target: Target, insert: Int?, move: Int?)] = []
        for (index, insert) in client.insertRows.enumerated() {
            targets.append((try target(insert.at, label(.insertRows, index)), index, nil))
        }
        for (index, move) in client.moveRows.enumerated() {
            targets.append((try target(move.to, label(.moveRows, index)), nil, index))
        }

        // Final section indices of the draft, then final rows within each current section by gap and client order.
        let draftSections = Reindexing(
            removed: draftRemovedSections,
            placed: (draft.insertSections.map(\.at) + draft.moveSections.map(\.to)).sorted())
        let draftMoves = Dictionary(
            draft.moveSections.map { ($0.from, $0.to) }, uniquingKeysWith: { first, _ in first })
        var draftRowsRemoved: [Int: [Int]] = [:]
        for delete in draft.deleteRows { draftRowsRemoved[delete.path.section, default: []].append(delete.path.row) }
        for move in draft.moveRows { draftRowsRemoved[move.from.section, default: []].append(move.from.row) }
        var bySection: [Int: [(survivorsBefore: Int, clientRow: Int, target: Int)]] = [:]
        for (index, item) in targets.enumerated() {
            let final: RowPath
            switch item.target {
            case .newSection(let insert, let row):
                final = RowPath(section: draft.insertSections[insert].at, row: row)
            case .gap(let section, let gap, let clientRow):
                let removed = (draftRowsRemoved[section] ?? []).sorted()
                bySection[section, default: []].append((gap - removed.countLess(than: gap), clientRow, index))
                continue
            }
            if let insert = item.insert { draft.insertRows[insert].at = final }
            if let move = item.move { draft.moveRows[move].to = final }
        }
        for section in bySection.keys.sorted() {
            let placements = bySection[section]!
            // Only inconsistent client indices can aim a position at a section the same batch deletes.
            if let deleter = draft.deleteSections.first(where: { $0.index == section }) {
                let first = targets[placements[0].target]
                let entry = first.insert.map { label(.insertRows, $0) } ?? label(.moveRows, first.move!)
                throw .invalidBatch(
                    entry,
                    "the position is in section \(section), which \(label(.deleteSections, deleter.origin)) deletes")
            }
            let finalSection = draftMoves[section] ?? draftSections.finalIndex(ofOld: section)
            for (rank, placement) in Self.ranked(placements.map { ($0.survivorsBefore, $0.clientRow) }).enumerated() {
                let item = targets[placements[placement.item].target]
                let final = RowPath(section: finalSection, row: placement.survivorsBefore + rank)
                if let insert = item.insert { draft.insertRows[insert].at = final }
                if let move = item.move { draft.moveRows[move].to = final }
            }
        }
        return draft
    }

    /// The gap at base (an old index: "just before it") of a placement at final index `final` of a client batch
    /// whose own renumbering is `reindexing`: right after the last survivor that precedes it.
    static func gap(_ reindexing: Reindexing, final: Int) -> Int {
        let survivors = reindexing.survivorsBefore(final: final)
        return survivors == 0 ? 0 : reindexing.oldIndex(ofSurvivor: survivors - 1) + 1
    }

    /// The section gap now of a section placement at the client's final index `final`.
    private func sectionGap(_ clientSections: Reindexing, final: Int, through entries: HistoryLog.Suffix) -> Int {
        var gap = Self.gap(clientSections, final: final)
        for history in entries { gap = history.layout.finalSectionGap(gap) }
        return gap
    }

    /// Placements ordered by (survivors before them, the client's final index): the rank of each is how many
    /// placements precede it, so its final index is its survivors-before plus its rank.
    static func ranked(_ keys: [(survivorsBefore: Int, clientFinal: Int)]) -> [(item: Int, survivorsBefore: Int)] {
        keys.indices
            .sorted {
                (keys[$0].survivorsBefore, keys[$0].clientFinal, $0) < (
                    keys[$1].survivorsBefore, keys[$1].clientFinal, $1
                )
            }
            .map { ($0, keys[$0].survivorsBefore) }
    }

    /// Negative indices cannot be carried through history meaningfully; they are out of range at any version.
    private func rejectNegativeIndices(_ client: ClientBatch, intent: Intent) throws(TableError) {
        func check(_ value: Int, _ list: BatchList, _ index: Int, _ what: @autoclosure () -> String) throws(TableError)
        {
            if value < 0 { throw .outOfRange(intent.label(list, index), "\(what()) does not exist") }
        }
        func check(_ path: RowPath, _ list: BatchList, _ index: Int) throws(TableError) {
            if path.section < 0 || path.row < 0 {
                throw .outOfRange(intent.label(list, index), "row \(path) does not exist")
            }
        }
        for (index, ref) in client.deleteSections.enumerated() {
            try check(ref.index, .deleteSections, index, "section \(ref.index)")
        }
        for (index, insert) in client.insertSections.enumerated() {
            try check(insert.at, .insertSections, index, "section \(insert.at)")
        }
        for (index, reload) in client.reloadSections.enumerated() {
            try check(reload.section.index, .reloadSections, index, "section \(reload.section.index)")
        }
        for (index, move) in client.moveSections.enumerated() {
            try check(move.from.index, .moveSections, index, "section \(move.from.index)")
            try check(move.to, .moveSections, index, "section \(move.to)")
        }
        for (index, ref) in client.deleteRows.enumerated() { try check(ref.path, .deleteRows, index) }
        for (index, insert) in client.insertRows.enumerated() { try check(insert.at, .insertRows, index) }
        for (index, reload) in client.reloadRows.enumerated() { try check(reload.row.path, .reloadRows, index) }
        for (index, patch) in client.patchRows.enumerated() { try check(patch.row.path, .patchRows, index) }
        for (index, move) in client.moveRows.enumerated() {
            try check(move.from.path, .moveRows, index)
            try check(move.to, .moveRows, index)
        }
    }
}
