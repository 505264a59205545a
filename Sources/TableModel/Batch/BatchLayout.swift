/// What a validated batch does to a particular table, in the form both applying it and rebasing through it need.
///
/// Rebasing asks where a section, row or gap ends up once per history entry, and history entries are nearly all
/// tiny batches, so what it reads is kept in small sorted arrays searched by bisection: no hashing, and no
/// per-question values to build (or arrays to retain).
struct BatchLayout: Sendable {
    /// How sections are renumbered.
    var sections: Reindexing
    /// Where each removed old section goes, aligned with `sections.removed`: its final index for a move, `nil`
    /// for a deletion.
    var sectionDestinations: [Int?]
    /// Final index → the insertSections entry that fills it.
    var sectionInserts: [Int: Int]
    /// Final index → old index, for moved sections.
    var sectionSources: [Int: Int]
    /// Rows that leave their old place (deletions and move sources), by old index path, ascending.
    var removedRows: [RowPath]
    /// Where each removed row goes, aligned with `removedRows`: its final index path for a move, `nil` for a
    /// deletion.
    var rowDestinations: [RowPath?]
    /// Final index paths filled by insertions and move destinations, ascending.
    var placedRows: [RowPath]

    /// Where a row or section reference ends up after the batch.
    enum Fate: Equatable {
        case at(RowPath)
        case deleted
        case sectionDeleted
    }

    /// The final index of old section `section`, or `nil` when the batch deletes it.
    func finalSection(ofOld section: Int) -> Int? {
        // Most batches leave the sections alone.
        if sections.removed.isEmpty, sections.placed.isEmpty { return section }
        let removedBefore = sections.removed.countLess(than: section)
        if removedBefore < sections.removed.count, sections.removed[removedBefore] == section {
            return sectionDestinations[removedBefore]
        }
        return sections.finalIndex(ofSurvivor: section - removedBefore)
    }

    /// The old index of final section `final`, or `nil` when the batch inserts it.
    func oldSection(ofFinal final: Int) -> Int? {
        if sectionInserts[final] != nil { return nil }
        if let from = sectionSources[final] { return from }
        return sections.oldIndex(ofSurvivor: sections.survivorsBefore(final: final))
    }

    /// The old rows of old section `section` that leave it, ascending.
    func rowsRemoved(fromOld section: Int) -> [Int] {
        removedRows[removedRowRange(inOld: section)].map(\.row)
    }

    /// How many old rows of old section `section` leave it.
    func removedRowCount(inOld section: Int) -> Int { removedRowRange(inOld: section).count }

    /// Where the row at old index path `path` is after the batch.
    func fate(of path: RowPath) -> Fate {
        guard let section = finalSection(ofOld: path.section) else { return .sectionDeleted }
        let sectionStart = removedRows.countLess(than: RowPath(section: path.section, row: .min))
        let removedBefore = removedRows.countLess(than: path, from: sectionStart)
        if removedBefore < removedRows.count, removedRows[removedBefore] == path {
            return rowDestinations[removedBefore].map(Fate.at) ?? .deleted
        }
        let survivor = path.row - (removedBefore - sectionStart)
        return .at(RowPath(section: section, row: finalRow(ofSurvivor: survivor, inFinal: section)))
    }

    /// The final index of a gap between sections: `gap` is "just before old section `gap`", anchored to the section
    /// that precedes it (its nearest survivor if that one leaves), and sections that the batch puts into the gap
    /// come before it, so that insertions into one gap keep commit order.
    func finalSectionGap(_ gap: Int) -> Int {
        var predecessor = gap - 1
        while predecessor >= 0, sections.isRemoved(predecessor) { predecessor -= 1 }
        var final = predecessor >= 0 ? sections.finalIndex(ofOld: predecessor) + 1 : 0
        while sections.isPlaced(final) { final += 1 }
        return final
    }

    /// The final position of a gap between rows of old section `section` (see ``finalSectionGap(_:)``), or `nil`
    /// when the batch deletes the section.
    func finalRowGap(section: Int, gap: Int) -> RowPath? {
        guard let final = finalSection(ofOld: section) else { return nil }
        let sectionStart = removedRows.countLess(than: RowPath(section: section, row: .min))
        // Invariant: `removedBefore` rows of the section below `predecessor + 1` leave. The removed rows just
        // below the gap are the last ones before `removedBefore`, so stepping over them needs no search.
        var removedBefore = removedRows.countLess(than: RowPath(section: section, row: gap), from: sectionStart)
        var predecessor = gap - 1
        while predecessor >= 0, removedBefore > sectionStart, removedRows[removedBefore - 1].row == predecessor {
            predecessor -= 1
            removedBefore -= 1
        }
        var row = predecessor >= 0 ? finalRow(ofSurvivor: predecessor - (removedBefore - sectionStart), inFinal: final) + 1 : 0
        var placed = placedRows.countLess(than: RowPath(section: final, row: row))
        while placed < placedRows.count, placedRows[placed] == RowPath(section: final, row: row) {
            row += 1
            placed += 1
        }
        return RowPath(section: final, row: row)
    }

    /// The final row of the `survivor`-th surviving row of final section `final`: survivors fill the rows that
    /// are not placed, in order (``Reindexing/finalIndex(ofSurvivor:)`` on the section's slice of `placedRows`).
    private func finalRow(ofSurvivor survivor: Int, inFinal final: Int) -> Int {
        var row = survivor
        var placed = placedRows.countLess(than: RowPath(section: final, row: .min))
        while placed < placedRows.count, placedRows[placed].section == final, placedRows[placed].row <= row {
            row += 1
            placed += 1
        }
        return row
    }

    /// The positions in `removedRows` of old section `section`'s rows.
    private func removedRowRange(inOld section: Int) -> Range<Int> {
        let start = removedRows.countLess(than: RowPath(section: section, row: .min))
        return start..<removedRows.countLess(than: RowPath(section: section + 1, row: .min), from: start)
    }
}
