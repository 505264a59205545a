extension TableEngine {
    /// UIKit's `reloadSections:` reloads a section's rows too: a section reload that carries rows replaces all the
    /// rows the section has now (rows added since the client's base included) with new ones, which get new ids.
    ///
    /// It is committed as what it does, `deleteRows` of the old rows and `insertRows` of the new ones (appended
    /// after the client's own entries), so that an update has one way of saying that rows come and go: every
    /// replica applies it as it is, and a stale intent that names a replaced row meets a deleted row. Under
    /// `reserveLastRow` the placeholder stays and the new rows go before it. Other entries of the batch may not
    /// touch the section's rows (`invalid_batch`); a locked row is not replaced (`not_editable`, by the rules).
    func replaceReloadedRows(_ draft: inout Draft, intent: Intent) throws(TableError) {
        guard draft.reloadSections.contains(where: { $0.rows != nil }) else { return }
        let clientDeletes = draft.deleteRows.count
        let clientInserts = draft.insertRows.count
        draft.sectionReloadDeletes = clientDeletes
        draft.sectionReloadInserts = clientInserts
        let sections = Reindexing(
            removed: (draft.deleteSections.map(\.index) + draft.moveSections.map(\.from)).sorted(),
            placed: (draft.insertSections.map(\.at) + draft.moveSections.map(\.to)).sorted())
        var replaced = Set<Int>()
        for (index, reload) in draft.reloadSections.enumerated() {
            // A section that does not exist, or that the batch also deletes, moves or reloads, is refused by the
            // validation, which names both entries.
            guard let rows = reload.rows, table.sections.indices.contains(reload.at),
                !sections.removed.contains(reload.at),
                replaced.insert(reload.at).inserted
            else { continue }
            let final = sections.finalIndex(ofSurvivor: sections.survivorIndex(ofOld: reload.at))
            let replacing = draft.label(.reloadSections, index, in: intent)
            func refuse(_ list: BatchList, _ entry: Int, _ path: RowPath) -> TableError {
                .invalidBatch(
                    draft.label(list, entry, in: intent),
                    "row \(path) is in section \(path.section), whose rows \(replacing) replaces")
            }
            for entry in 0..<clientDeletes where draft.deleteRows[entry].path.section == reload.at {
                throw refuse(.deleteRows, entry, draft.deleteRows[entry].path)
            }
            if let entry = draft.reloadRows.firstIndex(where: { $0.at.section == reload.at }) {
                throw refuse(.reloadRows, entry, draft.reloadRows[entry].at)
            }
            if let entry = draft.moveRows.firstIndex(where: { $0.from.section == reload.at }) {
                throw refuse(.moveRows, entry, draft.moveRows[entry].from)
            }
            for entry in 0..<clientInserts where draft.insertRows[entry].at.section == final {
                throw refuse(.insertRows, entry, draft.insertRows[entry].at)
            }
            if let entry = draft.moveRows.firstIndex(where: { $0.to.section == final }) {
                throw refuse(.moveRows, entry, draft.moveRows[entry].to)
            }
            let oldCount = table.sections[reload.at].rows.count
            let kept = table.rules.reserveLastRow ? min(oldCount, 1) : 0
            for row in 0..<(oldCount - kept) {
                draft.deleteRows.append((RowPath(section: reload.at, row: row), reload.origin))
            }
            for (row, content) in rows.enumerated() {
                draft.insertRows.append((RowPath(section: final, row: row), content, reload.origin))
            }
        }
    }
}
