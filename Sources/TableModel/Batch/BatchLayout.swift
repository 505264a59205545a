/// What a validated batch does to a particular table, in the form both applying it and rebasing through it need.
///
/// Rebasing asks where a section, row or gap ends up once per history entry, so what it reads is kept in sorted
/// arrays (no hashing, and no per-question values to build or arrays to retain), and the batch nearly every entry
/// holds, one insert, delete, move or edit, is also kept inline as a ``SingleRowChange`` that answers without
/// reading any array. The two methods rebasing calls per history entry, ``fate(of:)`` and
/// ``finalRowGap(section:gap:)``, are always inlined into its loops: as calls, each copied the layout out of the
/// history entry, which cost more than answering for a one-row batch.
struct BatchLayout: Sendable {
    /// How sections are renumbered.
    let sections: Reindexing
    /// Where each removed old section goes, aligned with `sections.removed`: its final index for a move, `nil`
    /// for a deletion.
    let sectionDestinations: [Int?]
    /// Final index → the insertSections entry that fills it.
    let sectionInserts: [Int: Int]
    /// Final index → old index, for moved sections.
    let sectionSources: [Int: Int]
    /// Rows that leave their old place (deletions and move sources), by old index path, ascending.
    let removedRows: [RowPath]
    /// Where each removed row goes, aligned with `removedRows`: its final index path for a move, `nil` for a
    /// deletion.
    let rowDestinations: [RowPath?]
    /// Final index paths filled by insertions and move destinations, ascending.
    let placedRows: [RowPath]
    /// Whether the batch leaves the sections alone (nothing removed or placed), so that every section keeps its
    /// index.
    let sectionsUnchanged: Bool
    /// The batch's rows as two index paths, when it leaves the sections alone and removes and places at most one
    /// row each; `nil` otherwise.
    let singleRowChange: SingleRowChange?

    /// Creates a layout from its sorted arrays (see the properties) and works out what is kept inline from them.
    init(
        sections: Reindexing, sectionDestinations: [Int?], sectionInserts: [Int: Int], sectionSources: [Int: Int],
        removedRows: [RowPath], rowDestinations: [RowPath?], placedRows: [RowPath]
    ) {
        self.sections = sections
        self.sectionDestinations = sectionDestinations
        self.sectionInserts = sectionInserts
        self.sectionSources = sectionSources
        self.removedRows = removedRows
        self.rowDestinations = rowDestinations
        self.placedRows = placedRows
        sectionsUnchanged = sections.removed.isEmpty && sections.placed.isEmpty
        singleRowChange =
            sectionsUnchanged && removedRows.count <= 1 && placedRows.count <= 1
            ? SingleRowChange(
                removed: removedRows.first, destination: rowDestinations.first ?? nil, placed: placedRows.first)
            : nil
    }

    /// About how many bytes the layout holds on the heap: its arrays and dictionaries, element by element, plus each
    /// allocation's header. An estimate for memory accounting, not an exact figure.
    var heapBytes: Int {
        let arrays = 32 * 6 + 8 * (sections.removed.count + sections.placed.count + sectionDestinations.count * 2)
        let dictionaries = 64 * 2 + 32 * (sectionInserts.count + sectionSources.count)
        let rows = 32 * 3 + 16 * (removedRows.count + placedRows.count) + 24 * rowDestinations.count
        return arrays + dictionaries + rows
    }

    /// Where a row or section reference ends up after the batch.
    enum Fate: Equatable {
        case at(RowPath)
        case deleted
        case sectionDeleted
    }

    /// The final index of old section `section`, or `nil` when the batch deletes it.
    func finalSection(ofOld section: Int) -> Int? {
        if sectionsUnchanged { return section }
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
    @inline(__always)
    func fate(of path: RowPath) -> Fate {
        if let singleRowChange { return singleRowChange.fate(of: path) }
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
    @inline(__always)
    func finalRowGap(section: Int, gap: Int) -> RowPath? {
        if let singleRowChange { return singleRowChange.finalRowGap(section: section, gap: gap) }
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
        var row =
            predecessor >= 0
            ? finalRow(ofSurvivor: predecessor - (removedBefore - sectionStart), inFinal: final) + 1 : 0
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
