extension Table {
    /// Validates `batch` against this table completely and applies it all-or-nothing, advancing ``version`` by one
    /// and the id generator past the ids the batch assigns. On error the table is unchanged.
    ///
    /// This is how every replica (a client, a replay from the log) follows the authoritative table. It checks the
    /// batch's structure and that inserted ids are exactly the next ones the generator would assign; it does not
    /// re-check the rules (`editable`, `movable`, `moves`, `reserveLastRow`, the limits), which the engine enforced
    /// when it resolved the intent that produced the batch. Limits in particular apply to changes made after
    /// them: a batch committed before a limit was lowered must still replay.
    /// An empty batch changes nothing and commits nothing: the version stays.
    public mutating func apply(_ batch: Batch) throws(TableError) {
        if applyOneReload(batch) { return }
        _ = try applyReturningLayout(batch)
    }

    /// Applies a batch that only reloads one row, an edit (most of what replicas apply), when the row exists: the
    /// checks ``apply(_:)`` makes of such a batch, without working out a layout. False for any other batch, or one
    /// that does not fit, which the general path then refuses with its errors.
    private mutating func applyOneReload(_ batch: Batch) -> Bool {
        guard batch.reloadRows.count == 1, batch.deleteRows.isEmpty, batch.insertRows.isEmpty, batch.moveRows.isEmpty,
            batch.deleteSections.isEmpty, batch.insertSections.isEmpty, batch.reloadSections.isEmpty,
            batch.moveSections.isEmpty
        else { return false }
        let reload = batch.reloadRows[0]
        let (section, row) = (reload.at.section, reload.at.row)
        guard section >= 0, section < sections.count, row >= 0, row < sections[section].rows.count else { return false }
        // In place, through the nested subscripts: the section's rows are not copied.
        sections[section].rows[row].value = reload.value
        if let editable = reload.editable { sections[section].rows[row].editable = editable }
        if let movable = reload.movable { sections[section].rows[row].movable = movable }
        if let editingStyle = reload.editingStyle { sections[section].rows[row].editingStyle = editingStyle }
        version += 1
        return true
    }

    /// Checks `batch` against this table exactly as ``apply(_:)`` would, without changing anything.
    public func validate(_ batch: Batch) throws(TableError) {
        _ = try layout(of: batch, checkIDs: true) { "\($0.rawValue)[\($1)]" }
    }

    mutating func applyReturningLayout(_ batch: Batch) throws(TableError) -> BatchLayout {
        let layout = try layout(of: batch, checkIDs: true) { "\($0.rawValue)[\($1)]" }
        if !batch.isEmpty { perform(batch, layout: layout) }
        return layout
    }

    /// Applies a validated batch in place: reloads (old positions), then sections are rearranged, then each
    /// section's rows are rearranged in one pass that both removes and places them.
    private mutating func perform(_ batch: Batch, layout: BatchLayout) {
        for reload in batch.reloadRows {
            var row = sections[reload.at.section].rows[reload.at.row]
            row.value = reload.value
            if let editable = reload.editable { row.editable = editable }
            if let movable = reload.movable { row.movable = movable }
            if let editingStyle = reload.editingStyle { row.editingStyle = editingStyle }
            sections[reload.at.section].rows[reload.at.row] = row
        }
        for reload in batch.reloadSections {
            sections[reload.at].header = reload.header
            sections[reload.at].footer = reload.footer
        }
        var rowPlacements: [Int: [(index: Int, element: Row)]] = [:]
        for insert in batch.insertRows {
            rowPlacements[insert.at.section, default: []].append((insert.at.row, insert.row))
        }
        for move in batch.moveRows {
            rowPlacements[move.to.section, default: []].append(
                (move.to.row, sections[move.from.section].rows[move.from.row]))
        }
        rearrangeSections(batch, layout: layout)
        var touched = Set(rowPlacements.keys)
        for path in layout.removedRows { touched.insert(layout.finalSection(ofOld: path.section)!) }
        for section in touched {
            let removed = layout.oldSection(ofFinal: section).map { layout.rowsRemoved(fromOld: $0) } ?? []
            let placements = rowPlacements.removeValue(forKey: section)?.sorted { $0.index < $1.index } ?? []
            sections[section].rows.replace(removing: removed, placing: placements)
        }
        version += 1
        nextID += UInt64(batch.createdIDCount)
    }

    /// Deletes, inserts and moves sections. A separate method so that the temporary copies of moved sections are
    /// gone before their rows are rearranged in place (otherwise those arrays would be copied, not mutated).
    private mutating func rearrangeSections(_ batch: Batch, layout: BatchLayout) {
        guard !layout.sectionsUnchanged else { return }
        var placements: [(index: Int, element: Section)] = batch.insertSections.map { ($0.at, $0.section) }
        placements += batch.moveSections.map { ($0.to, sections[$0.from]) }
        placements.sort { $0.index < $1.index }
        sections.replace(removing: layout.sections.removed, placing: placements)
    }

    /// Validates `batch` against this table and works out its layout. `label` names an entry for messages.
    func layout(
        of batch: Batch, checkIDs: Bool, label: (BatchList, Int) -> String
    ) throws(TableError) -> BatchLayout {
        let oldSectionCount = sections.count

        // Sections, old space: deletions, reloads, move sources; each old section may play one role.
        var sectionRole: [Int: (verb: String, label: String)] = [:]
        func claimSection(_ section: Int, _ verb: String, _ entry: String) throws(TableError) {
            guard section >= 0, section < oldSectionCount else {
                throw .outOfRange(
                    entry, "section \(section) does not exist: table has \(oldSectionCount) sections before the update")
            }
            if let other = sectionRole[section] {
                throw .invalidBatch(entry, "section \(section) is also \(other.verb) by \(other.label)")
            }
            sectionRole[section] = (verb, entry)
        }
        var deletedSections = Set<Int>()
        for (index, section) in batch.deleteSections.enumerated() {
            try claimSection(section, "deleted", label(.deleteSections, index))
            deletedSections.insert(section)
        }
        for (index, reload) in batch.reloadSections.enumerated() {
            try claimSection(reload.at, "reloaded", label(.reloadSections, index))
        }
        for (index, move) in batch.moveSections.enumerated() {
            try claimSection(move.from, "moved", label(.moveSections, index))
        }

        // Sections, new space: insertions and move destinations fill distinct final slots below the final count.
        let finalSectionCount = oldSectionCount - batch.deleteSections.count + batch.insertSections.count
        var sectionSlot: [Int: String] = [:]
        func placeSection(_ section: Int, _ entry: String) throws(TableError) {
            guard section >= 0, section < finalSectionCount else {
                throw .outOfRange(
                    entry,
                    "section index \(section) is out of range: table has \(finalSectionCount) sections after the update"
                )
            }
            if let other = sectionSlot[section] {
                throw .invalidBatch(entry, "section index \(section) is also the destination of \(other)")
            }
            sectionSlot[section] = entry
        }
        var sectionInserts: [Int: Int] = [:]
        for (index, insert) in batch.insertSections.enumerated() {
            try placeSection(insert.at, label(.insertSections, index))
            sectionInserts[insert.at] = index
        }
        var movedInto: [Int: Int] = [:]
        for (index, move) in batch.moveSections.enumerated() {
            try placeSection(move.to, label(.moveSections, index))
            movedInto[move.to] = move.from
        }
        let sectionRemovals =
            (batch.deleteSections.map { (from: $0, to: Int?.none) } + batch.moveSections.map { ($0.from, $0.to) })
            .sorted { $0.from < $1.from }
        let sectionReindexing = Reindexing(
            removed: sectionRemovals.map(\.from),
            placed: (batch.insertSections.map(\.at) + batch.moveSections.map(\.to)).sorted())

        // Rows, old space: deletions, reloads, move sources, in sections that exist and that the batch keeps.
        var rowRole: [RowPath: (verb: String, label: String)] = [:]
        // Only a second claim can collide with another: most batches claim one row, and filling the dictionary
        // for it (an allocation and a hash) cost more than the rest of this check.
        let severalRowClaims = batch.deleteRows.count + batch.reloadRows.count + batch.moveRows.count > 1
        func claimRow(_ path: RowPath, _ verb: String, _ entry: String) throws(TableError) {
            guard path.section >= 0, path.section < oldSectionCount else {
                throw .outOfRange(
                    entry, "row \(path) does not exist: table has \(oldSectionCount) sections before the update")
            }
            let rowCount = sections[path.section].rows.count
            guard path.row >= 0, path.row < rowCount else {
                throw .outOfRange(
                    entry, "row \(path) does not exist: section \(path.section) has \(rowCount) rows before the update")
            }
            if deletedSections.contains(path.section), let deleter = sectionRole[path.section]?.label {
                throw .invalidBatch(entry, "row \(path) is in section \(path.section), which \(deleter) deletes")
            }
            guard severalRowClaims else { return }
            if let other = rowRole[path] {
                throw .invalidBatch(entry, "row \(path) is also \(other.verb) by \(other.label)")
            }
            rowRole[path] = (verb, entry)
        }
        var removedRowCounts: [Int: Int] = [:]
        for (index, path) in batch.deleteRows.enumerated() {
            try claimRow(path, "deleted", label(.deleteRows, index))
            removedRowCounts[path.section, default: 0] += 1
        }
        for (index, reload) in batch.reloadRows.enumerated() {
            try claimRow(reload.at, "reloaded", label(.reloadRows, index))
        }
        for (index, move) in batch.moveRows.enumerated() {
            try claimRow(move.from, "moved", label(.moveRows, index))
            removedRowCounts[move.from.section, default: 0] += 1
        }

        // Rows, new space: placements into final sections, distinct and below each section's final count.
        var placedEntries: [Int: [(row: Int, label: String)]] = [:]
        for (index, insert) in batch.insertRows.enumerated() {
            let entry = label(.insertRows, index)
            placedEntries[insert.at.section, default: []].append((insert.at.row, entry))
            guard insert.at.section >= 0, insert.at.section < finalSectionCount else {
                throw .outOfRange(
                    entry, "row \(insert.at) is out of range: table has \(finalSectionCount) sections after the update")
            }
        }
        for (index, move) in batch.moveRows.enumerated() {
            let entry = label(.moveRows, index)
            placedEntries[move.to.section, default: []].append((move.to.row, entry))
            guard move.to.section >= 0, move.to.section < finalSectionCount else {
                throw .outOfRange(
                    entry, "row \(move.to) is out of range: table has \(finalSectionCount) sections after the update")
            }
        }
        for section in placedEntries.keys.sorted() {
            let entries = placedEntries[section]!
            let survivors: Int
            if let insert = sectionInserts[section] {
                survivors = batch.insertSections[insert].section.rows.count
            } else {
                let old =
                    movedInto[section]
                    ?? sectionReindexing.oldIndex(ofSurvivor: sectionReindexing.survivorsBefore(final: section))
                survivors = sections[old].rows.count - removedRowCounts[old, default: 0]
            }
            let finalCount = survivors + entries.count
            var taken: [Int: String] = [:]
            for (row, entry) in entries {
                let path = RowPath(section: section, row: row)
                guard row >= 0, row < finalCount else {
                    throw .outOfRange(
                        entry, "row \(path) is out of range: section \(section) has \(finalCount) rows after the update"
                    )
                }
                if let other = taken[row] {
                    throw .invalidBatch(entry, "row \(path) is also the destination of \(other)")
                }
                taken[row] = entry
            }
        }
        if checkIDs { try checkCreatedIDs(batch, label: label) }

        // Built in place, and only when there is something to build: every resolve and commit lays out a batch,
        // most have one or no row of each kind, and concatenating mapped lists, or sorting and mapping empty
        // ones, cost more than the little there is to sort.
        var removedRows: [RowPath] = []
        var rowDestinations: [RowPath?] = []
        if !batch.deleteRows.isEmpty || !batch.moveRows.isEmpty {
            var rowRemovals: [(from: RowPath, to: RowPath?)] = []
            rowRemovals.reserveCapacity(batch.deleteRows.count + batch.moveRows.count)
            for path in batch.deleteRows { rowRemovals.append((path, nil)) }
            for move in batch.moveRows { rowRemovals.append((move.from, move.to)) }
            rowRemovals.sort { $0.from < $1.from }
            removedRows = rowRemovals.map(\.from)
            rowDestinations = rowRemovals.map(\.to)
        }
        var placedRows: [RowPath] = []
        if !batch.insertRows.isEmpty || !batch.moveRows.isEmpty {
            placedRows.reserveCapacity(batch.insertRows.count + batch.moveRows.count)
            for insert in batch.insertRows { placedRows.append(insert.at) }
            for move in batch.moveRows { placedRows.append(move.to) }
            placedRows.sort()
        }
        return BatchLayout(
            sections: sectionReindexing, sectionDestinations: sectionRemovals.map(\.to), sectionInserts: sectionInserts,
            sectionSources: movedInto, removedRows: removedRows, rowDestinations: rowDestinations,
            placedRows: placedRows)
    }

    /// Inserted ids must be exactly the next ones the generator assigns (in any order), which makes them unique
    /// and never reused without an index of every id in the table.
    private func checkCreatedIDs(_ batch: Batch, label: (BatchList, Int) -> String) throws(TableError) {
        let count = UInt64(batch.createdIDCount)
        var seen = Set<UInt64>()
        func check(_ id: String, _ kind: IDKind, _ entry: String) throws(TableError) {
            let number = id.hasPrefix(kind.rawValue) ? UInt64(id.dropFirst()) : nil
            guard let number, number >= nextID, number - nextID < count, Table.id(kind, number) == id else {
                let expected = count == 1 ? "\(nextID)" : "\(nextID) to \(nextID + count - 1)"
                throw .invalidBatch(
                    entry,
                    "\(kind == .section ? "section" : "row") id \"\(id)\" is not a fresh id: this batch assigns ids numbered \(expected)"
                )
            }
            if !seen.insert(number).inserted { throw .invalidBatch(entry, "id \"\(id)\" is assigned twice") }
        }
        for (index, insert) in batch.insertSections.enumerated() {
            let entry = label(.insertSections, index)
            try check(insert.section.id, .section, entry)
            for row in insert.section.rows { try check(row.id, .row, entry) }
        }
        for (index, insert) in batch.insertRows.enumerated() {
            try check(insert.row.id, .row, label(.insertRows, index))
        }
    }
}

extension Batch {
    /// How many ids the batch assigns: one per inserted section and one per inserted row, including the rows of
    /// inserted sections.
    var createdIDCount: Int {
        insertSections.reduce(insertSections.count + insertRows.count) { $0 + $1.section.rows.count }
    }
}
