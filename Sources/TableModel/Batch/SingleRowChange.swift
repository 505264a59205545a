/// What a batch that leaves the sections alone, removes at most one row and places at most one does to rows: one
/// insert, delete, move or edit, which is nearly every batch in a busy table's history. Three index paths describe
/// it completely, so rebasing past it is arithmetic on values kept inline, with no array to search.
///
/// Its answers are ``BatchLayout``'s for such a batch: with one removed row and one placed row, counting the
/// removed rows before a row and the placed rows up to it are single comparisons, and old and final section
/// indices agree.
struct SingleRowChange: Sendable {
    /// The old index path of the row that leaves its place (deleted or moved), if any.
    var removed: RowPath?
    /// Where the removed row goes: its final index path for a move, `nil` for a deletion.
    var destination: RowPath?
    /// The final index path filled by an insertion or a move destination, if any.
    var placed: RowPath?

    /// Where the row at old index path `path` is after the batch.
    func fate(of path: RowPath) -> BatchLayout.Fate {
        if path == removed { return destination.map(BatchLayout.Fate.at) ?? .deleted }
        return .at(RowPath(section: path.section, row: finalRow(ofOld: path.row, section: path.section)))
    }

    /// The final position of the gap just before old row `gap` of `section`: just after the row that precedes it
    /// (or that row's predecessor, if it leaves), and after a row the batch places there.
    func finalRowGap(section: Int, gap: Int) -> RowPath {
        var predecessor = gap - 1
        if predecessor >= 0, removed == RowPath(section: section, row: predecessor) { predecessor -= 1 }
        var row = predecessor >= 0 ? finalRow(ofOld: predecessor, section: section) + 1 : 0
        if placed == RowPath(section: section, row: row) { row += 1 }
        return RowPath(section: section, row: row)
    }

    /// The final row of old row `old` of `section`, which stays in it: one less if the removed row was before it,
    /// then one more if the placed row is at or before where that leaves it.
    private func finalRow(ofOld old: Int, section: Int) -> Int {
        var row = old
        if let removed, removed.section == section, removed.row < old { row -= 1 }
        if let placed, placed.section == section, placed.row <= row { row += 1 }
        return row
    }
}
