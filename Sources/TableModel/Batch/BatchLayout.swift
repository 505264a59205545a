/// What a validated batch does to a particular table, in the form both applying it and rebasing through it need.
struct BatchLayout: Sendable {
    /// How sections are renumbered.
    var sections: Reindexing
    /// Old sections the batch deletes.
    var deletedSections: Set<Int>
    /// Old section index → final index, for moved sections.
    var sectionMoves: [Int: Int]
    /// Final index → the insertSections entry that fills it.
    var sectionInserts: [Int: Int]
    /// Final index → old index, for moved sections.
    var sectionSources: [Int: Int]
    /// Old section index → how its rows are renumbered (removed rows), for sections that lose rows.
    var rowsRemoved: [Int: [Int]]
    /// Final section index → the final row indices that are filled, for sections that gain rows.
    var rowsPlaced: [Int: [Int]]
    /// Rows the batch deletes, by old index path.
    var deletedRows: Set<RowPath>
    /// Old index path → final index path, for moved rows.
    var rowMoves: [RowPath: RowPath]

    /// Where a row or section reference ends up after the batch.
    enum Fate: Equatable {
        case at(RowPath)
        case deleted
        case sectionDeleted
    }

    /// The final index of old section `section`, or `nil` when the batch deletes it.
    func finalSection(ofOld section: Int) -> Int? {
        // Most batches leave the sections alone; rebasing asks this once per batch of history, so skip hashing.
        if sections.removed.isEmpty, sections.placed.isEmpty { return section }
        if deletedSections.contains(section) { return nil }
        if let to = sectionMoves[section] { return to }
        return sections.finalIndex(ofOld: section)
    }

    /// The old index of final section `final`, or `nil` when the batch inserts it.
    func oldSection(ofFinal final: Int) -> Int? {
        if sectionInserts[final] != nil { return nil }
        if let from = sectionSources[final] { return from }
        return sections.oldIndex(ofSurvivor: sections.survivorsBefore(final: final))
    }

    /// How the rows of old section `section` (which must survive) are renumbered into final section `final`.
    func rowReindexing(old section: Int, final: Int) -> Reindexing {
        Reindexing(removed: rowsRemoved[section] ?? [], placed: rowsPlaced[final] ?? [])
    }

    /// Where the row at old index path `path` is after the batch.
    func fate(of path: RowPath) -> Fate {
        guard let section = finalSection(ofOld: path.section) else { return .sectionDeleted }
        if !deletedRows.isEmpty, deletedRows.contains(path) { return .deleted }
        if !rowMoves.isEmpty, let to = rowMoves[path] { return .at(to) }
        let row = rowReindexing(old: path.section, final: section).finalIndex(ofOld: path.row)
        return .at(RowPath(section: section, row: row))
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
        let rows = rowReindexing(old: section, final: final)
        var predecessor = gap - 1
        while predecessor >= 0, rows.isRemoved(predecessor) { predecessor -= 1 }
        var row = predecessor >= 0 ? rows.finalIndex(ofOld: predecessor) + 1 : 0
        while rows.isPlaced(row) { row += 1 }
        return RowPath(section: final, row: row)
    }
}
