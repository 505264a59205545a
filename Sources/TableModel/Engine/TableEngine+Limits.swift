extension TableEngine {
    /// The limits of the rules, for the draft as it will be committed (after retargeting).
    ///
    /// Limits apply to changes made after them: a table may hold more than a limit allows (the limit was lowered
    /// since), and then a change that does not grow the quantity over the limit is allowed — deleting, editing,
    /// moving within a section, or a batch that shrinks as much as it grows. What is refused is a section count,
    /// a section's row count or a value's size that ends up over the limit and larger than it was.
    func checkLimits(_ draft: Draft, layout: BatchLayout, label: (BatchList, Int) -> String) throws(TableError) {
        let rules = table.rules
        let finalSectionCount = table.sections.count - draft.deleteSections.count + draft.insertSections.count
        if finalSectionCount > rules.maxSections, finalSectionCount > table.sections.count {
            // More sections than before: the batch inserts at least one, and the first is named.
            throw .limitExceeded(
                label(.insertSections, 0),
                "table would have \(finalSectionCount) sections, more than the limit of \(rules.maxSections)")
        }

        for (index, insert) in draft.insertSections.enumerated() {
            let entry = label(.insertSections, index)
            if insert.content.rows.count > rules.maxRowsPerSection {
                throw .limitExceeded(
                    entry,
                    "section \(insert.at) would have \(insert.content.rows.count) rows, more than the limit of \(rules.maxRowsPerSection)"
                )
            }
            for row in insert.content.rows { try checkValueSize(row.value, was: nil, entry) }
        }
        if !draft.insertRows.isEmpty || !draft.moveRows.isEmpty {
            for (section, count) in finalRowCounts(draft, layout: layout).sorted(by: { $0.key < $1.key })
            where count > rules.maxRowsPerSection {
                // A section the batch inserts had no rows before.
                guard count > layout.oldSection(ofFinal: section).map({ table.sections[$0].rows.count }) ?? 0 else {
                    continue
                }
                let entry =
                    draft.insertRows.firstIndex { $0.at.section == section }.map { label(.insertRows, $0) }
                    ?? label(.moveRows, draft.moveRows.firstIndex { $0.to.section == section }!)
                throw .limitExceeded(
                    entry,
                    "section \(section) would have \(count) rows, more than the limit of \(rules.maxRowsPerSection)")
            }
        }
        for (index, insert) in draft.insertRows.enumerated() {
            try checkValueSize(insert.content.value, was: nil, label(.insertRows, index))
        }
        for (index, reload) in draft.reloadRows.enumerated() {
            try checkValueSize(
                reload.value, was: table.sections[reload.at.section].rows[reload.at.row].value,
                label(.reloadRows, index))
        }
    }

    /// A value over `maxValueBytes` is refused unless it replaces one that is at least as big.
    private func checkValueSize(_ value: JSONValue, was old: JSONValue?, _ entry: String) throws(TableError) {
        let limit = table.rules.maxValueBytes
        let size = value.encodedByteCount
        if size > limit, size > old?.encodedByteCount ?? 0 {
            throw .limitExceeded(entry, "value is \(size) bytes, more than the limit of \(limit)")
        }
    }
}
