import TableModel

/// Random tables, random valid batches and random intents for the property tests and for the engine's fuzz target
/// (scripts/fuzz/engine.swift), which draws their choices from its input.
enum RandomTables {
    static func table(using generator: inout some RandomNumberGenerator) -> Table {
        let sections = (0..<Int.random(in: 0...4, using: &generator)).map { section in
            SectionContent(
                header: Bool.random(using: &generator) ? "h\(section)" : nil,
                rows: (0..<Int.random(in: 0...6, using: &generator)).map { RowContent(value: .number(Double($0))) })
        }
        return Table(contents: sections)
    }

    /// A random batch that is valid for `table`: each old section and row plays at most one role, and
    /// placements fill distinct final slots below each final count. Ids are the next ones the table assigns.
    static func validBatch(for table: Table, using generator: inout some RandomNumberGenerator) -> Batch {
        var batch = Batch()
        var nextID = table.nextID
        func newID(_ prefix: String) -> String {
            defer { nextID += 1 }
            return "\(prefix)\(nextID)"
        }
        let oldCount = table.sections.count
        var survivingOld: [Int] = [] // old sections that are kept (moved or in place)
        var movedSections: [Int] = []
        for section in 0..<oldCount {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: batch.deleteSections.append(section)
            case 1:
                movedSections.append(section)
                survivingOld.append(section)
            case 2:
                batch.reloadSections.append(.init(at: section, header: "new\(section)", footer: nil))
                survivingOld.append(section)
            default: survivingOld.append(section)
            }
        }
        let insertedSections = Int.random(in: 0...2, using: &generator)
        let finalCount = oldCount - batch.deleteSections.count + insertedSections
        var slots = Array(0..<finalCount).shuffled(using: &generator)
        for section in movedSections { batch.moveSections.append(.init(from: section, to: slots.removeLast())) }
        var insertedAt: [Int] = []
        for _ in 0..<insertedSections {
            let at = slots.removeLast()
            insertedAt.append(at)
        }

        // Final section index of every kept old section.
        let placedSections = Set(batch.moveSections.map(\.to) + insertedAt)
        var finalOf: [Int: Int] = [:]
        for move in batch.moveSections { finalOf[move.from] = move.to }
        var freeFinal = (0..<finalCount).filter { !placedSections.contains($0) }.makeIterator()
        for section in survivingOld where finalOf[section] == nil { finalOf[section] = freeFinal.next()! }

        // Rows in old space.
        var survivors: [Int: Int] = [:] // final section → surviving rows
        var movedRows: [RowPath] = []
        for section in survivingOld {
            var kept = 0
            for row in 0..<table.sections[section].rows.count {
                let path = RowPath(section: section, row: row)
                switch Int.random(in: 0..<6, using: &generator) {
                case 0: batch.deleteRows.append(path)
                case 1: movedRows.append(path)
                case 2:
                    batch.reloadRows.append(
                        .init(at: path, value: "reloaded", editable: Bool.random(using: &generator) ? nil : true))
                    kept += 1
                default: kept += 1
                }
            }
            survivors[finalOf[section]!] = kept
        }

        // Inserted sections are created first so that their ids precede inserted rows' ids (any order is valid).
        var insertedRowCounts: [Int: Int] = [:]
        for at in insertedAt {
            let rows = (0..<Int.random(in: 0...2, using: &generator)).map { _ in Row(id: "", value: "in new section") }
            batch.insertSections.append(.init(at: at, section: Section(id: newID("s"), header: "inserted", rows: rows)))
            let index = batch.insertSections.count - 1
            for row in batch.insertSections[index].section.rows.indices {
                batch.insertSections[index].section.rows[row].id = newID("r")
            }
            insertedRowCounts[at] = rows.count
        }

        // Row placements in new space: moved rows go to random final sections, plus a few inserts per section.
        guard finalCount > 0 else {
            batch.moveRows = []
            return batch
        }
        var placements: [Int: [Int]] = [:] // final section → placement ids (negative: insert, else moved row index)
        for index in movedRows.indices {
            placements[Int.random(in: 0..<finalCount, using: &generator), default: []].append(index)
        }
        var insertCount = 0
        for section in 0..<finalCount {
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                insertCount += 1
                placements[section, default: []].append(-insertCount)
            }
        }
        for (section, items) in placements.sorted(by: { $0.key < $1.key }) {
            let base = survivors[section] ?? insertedRowCounts[section] ?? 0
            var rowSlots = Array(0..<(base + items.count)).shuffled(using: &generator)
            for item in items {
                let at = RowPath(section: section, row: rowSlots.removeLast())
                if item >= 0 {
                    batch.moveRows.append(.init(from: movedRows[item], to: at))
                } else {
                    batch.insertRows.append(.init(at: at, row: Row(id: newID("r"), value: .number(Double(-item)))))
                }
            }
        }
        batch.deleteSections.shuffle(using: &generator)
        batch.deleteRows.shuffle(using: &generator)
        batch.insertRows.shuffle(using: &generator)
        return batch
    }

    /// The naive reference: reloads in old space, then every deletion (and move source) removed in descending
    /// order, then every insertion (and move destination) inserted in ascending order, on arrays of arrays.
    static func reference(_ table: Table, _ batch: Batch) -> [Section] {
        var sections = table.sections
        for reload in batch.reloadRows {
            sections[reload.at.section].rows[reload.at.row].value = reload.value
            if let editable = reload.editable { sections[reload.at.section].rows[reload.at.row].editable = editable }
            if let movable = reload.movable { sections[reload.at.section].rows[reload.at.row].movable = movable }
            if let style = reload.editingStyle { sections[reload.at.section].rows[reload.at.row].editingStyle = style }
        }
        for reload in batch.reloadSections {
            sections[reload.at].header = reload.header
            sections[reload.at].footer = reload.footer
        }
        var movedRows: [RowPath: Row] = [:]
        for move in batch.moveRows { movedRows[move.from] = sections[move.from.section].rows[move.from.row] }
        let rowRemovals = (batch.deleteRows + batch.moveRows.map(\.from)).sorted(by: >)
        for path in rowRemovals { sections[path.section].rows.remove(at: path.row) }
        var movedSections: [Int: Section] = [:]
        for move in batch.moveSections { movedSections[move.from] = sections[move.from] }
        for index in (batch.deleteSections + batch.moveSections.map(\.from)).sorted(by: >) {
            sections.remove(at: index)
        }
        var sectionInsertions: [(Int, Section)] = batch.insertSections.map { ($0.at, $0.section) }
        sectionInsertions += batch.moveSections.map { ($0.to, movedSections[$0.from]!) }
        for (at, section) in sectionInsertions.sorted(by: { $0.0 < $1.0 }) { sections.insert(section, at: at) }
        var rowInsertions: [(RowPath, Row)] = batch.insertRows.map { ($0.at, $0.row) }
        rowInsertions += batch.moveRows.map { ($0.to, movedRows[$0.from]!) }
        for (at, row) in rowInsertions.sorted(by: { $0.0 < $1.0 }) { sections[at.section].rows.insert(row, at: at.row) }
        return sections
    }

    /// A random intent at the current version of `table`; it may well be refused, which the callers skip.
    static func intent(for table: Table, using generator: inout some RandomNumberGenerator) -> Intent {
        let sectionCount = table.sections.count
        func randomPath(extra: Int) -> RowPath {
            let section = Int.random(in: 0..<max(sectionCount, 1), using: &generator)
            let rows = sectionCount == 0 ? 0 : table.sections[section].rows.count
            return RowPath(section: section, row: Int.random(in: 0..<max(rows + extra, 1), using: &generator))
        }
        switch Int.random(in: 0..<12, using: &generator) {
        case 0, 1: return .insert(at: randomPath(extra: 1), row: RowContent(value: .string("i\(table.nextID)")))
        case 2, 3: return .delete(RowRef(randomPath(extra: 0)))
        case 4, 5: return .move(from: RowRef(randomPath(extra: 0)), to: randomPath(extra: 0))
        case 6: return .edit(RowRef(randomPath(extra: 0)), value: .string("e\(table.version)"))
        case 11:
            let field = ["done", "qty"].randomElement(using: &generator)!
            let change: JSONValue = Bool.random(using: &generator) ? .number(Double(table.version)) : .null
            return .patch(RowRef(randomPath(extra: 0)), patch: .object([field: change]))
        case 7:
            return .insertSection(
                at: Int.random(in: 0...sectionCount, using: &generator),
                section: SectionContent(rows: [RowContent(value: "n")]))
        case 8: return .deleteSection(SectionRef(Int.random(in: 0..<max(sectionCount, 1), using: &generator)))
        case 9:
            let rows = (0..<Int.random(in: 0...3, using: &generator)).map {
                RowContent(value: .string("s\(table.nextID)-\($0)"))
            }
            return .editSection(SectionRef(Int.random(in: 0..<max(sectionCount, 1), using: &generator)), rows: rows)
        default:
            return .moveSection(
                from: SectionRef(Int.random(in: 0..<max(sectionCount, 1), using: &generator)),
                to: Int.random(in: 0..<max(sectionCount, 1), using: &generator))
        }
    }

    /// The client form of a committed batch: no ids on inserted content, ids on some references.
    static func clientBatch(_ batch: Batch, _ table: Table, using generator: inout some RandomNumberGenerator)
        -> ClientBatch
    {
        func rowRef(_ path: RowPath) -> RowRef {
            RowRef(path, id: Bool.random(using: &generator) ? table.row(at: path)!.id : nil)
        }
        func sectionRef(_ index: Int) -> SectionRef {
            SectionRef(index, id: Bool.random(using: &generator) ? table.sections[index].id : nil)
        }
        func content(_ row: Row) -> RowContent {
            RowContent(value: row.value, editable: row.editable, movable: row.movable)
        }
        return ClientBatch(
            deleteSections: batch.deleteSections.map(sectionRef),
            insertSections: batch.insertSections.map {
                .init(
                    at: $0.at,
                    section: SectionContent(
                        header: $0.section.header, footer: $0.section.footer, rows: $0.section.rows.map(content)))
            },
            reloadSections: batch.reloadSections.map {
                .init(section: sectionRef($0.at), header: .some($0.header), footer: .some($0.footer))
            },
            moveSections: batch.moveSections.map { .init(from: sectionRef($0.from), to: $0.to) },
            deleteRows: batch.deleteRows.map(rowRef),
            insertRows: batch.insertRows.map { .init(at: $0.at, row: content($0.row)) },
            reloadRows: batch.reloadRows.map {
                .init(row: rowRef($0.at), value: $0.value, editable: $0.editable, movable: $0.movable)
            },
            moveRows: batch.moveRows.map { .init(from: rowRef($0.from), to: $0.to) })
    }

    /// A random intent against `table` as a client makes it (rows named with their ids), usually valid, sometimes not.
    static func clientIntent(for table: Table, using generator: inout some RandomNumberGenerator) -> Intent {
        let sections = table.sections
        func randomRow() -> RowRef? {
            let paths = sections.indices.flatMap { s in sections[s].rows.indices.map { RowPath(section: s, row: $0) } }
            guard let path = paths.randomElement(using: &generator) else { return nil }
            return RowRef(path, id: table.row(at: path)!.id)
        }
        func randomSlot(growing: Bool) -> RowPath? {
            guard let section = sections.indices.randomElement(using: &generator) else { return nil }
            return RowPath(
                section: section,
                row: Int.random(in: 0...max(0, sections[section].rows.count - (growing ? 0 : 1)), using: &generator))
        }
        let value = JSONValue.number(Double(Int.random(in: 100..<1000, using: &generator)))
        switch Int.random(in: 0..<10, using: &generator) {
        case 0, 1:
            if let at = randomSlot(growing: true) { return .insert(at: at, row: RowContent(value: value)) }
        case 2:
            if let row = randomRow() { return .delete(row) }
        case 3, 4:
            if let row = randomRow(), let to = randomSlot(growing: false) { return .move(from: row, to: to) }
        case 5:
            guard let row = randomRow() else { break }
            if Bool.random(using: &generator) { return .edit(row, value: value) }
            // Patches of a field or two: concurrent ones of different fields all stay.
            let field = ["done", "qty", "note"].randomElement(using: &generator)!
            return .patch(row, patch: .object([field: Bool.random(using: &generator) ? value : .null, "title": "t"]))
        case 6:
            return .insertSection(
                at: Int.random(in: 0...sections.count, using: &generator),
                section: SectionContent(header: "h", rows: [RowContent(value: value)]))
        case 7:
            if let s = sections.indices.randomElement(using: &generator) {
                return Bool.random(using: &generator)
                    ? .deleteSection(SectionRef(s, id: sections[s].id))
                    : .moveSection(
                        from: SectionRef(s, id: sections[s].id),
                        to: Int.random(in: 0..<sections.count, using: &generator))
            }
        case 8:
            if let s = sections.indices.randomElement(using: &generator) {
                return .editSection(
                    SectionRef(s, id: sections[s].id), header: .some("e\(value)"),
                    rows: Bool.random(using: &generator) ? [RowContent(value: value)] : nil)
            }
        default:
            var batch = ClientBatch()
            var used: Set<RowPath> = []
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                if let row = randomRow(), used.insert(row.path).inserted { batch.deleteRows.append(row) }
            }
            if Bool.random(using: &generator), let row = randomRow(), used.insert(row.path).inserted {
                batch.reloadRows.append(.init(row: row, value: value))
            }
            if Bool.random(using: &generator), let row = randomRow(), used.insert(row.path).inserted {
                batch.patchRows.append(.init(row: row, patch: ["qty": value]))
            }
            if Bool.random(using: &generator), let at = randomSlot(growing: false) {
                batch.insertRows.append(.init(at: at, row: RowContent(value: value)))
            }
            if !batch.deleteRows.isEmpty || !batch.insertRows.isEmpty { return .batch(batch) }
        }
        return .insertSection(at: 0, section: SectionContent(header: "fallback"))
    }

    /// The first promise of the rules that a commit from `before` to `after` through `batch` broke, or nil: rows
    /// moved under `withinSection` stay in their section, a reserved last row stays last, and under `limits`
    /// lowered below the table's content nothing grows past them.
    static func brokenRule(before: Table, after: Table, batch: Batch, limits: TableRules? = nil) -> String? {
        if after.rules.moves == .withinSection {
            for move in batch.moveRows
            where after.sections[move.to.section].id != before.sections[move.from.section].id {
                return "row \(move.from) left its section under withinSection"
            }
        }
        if after.rules.reserveLastRow {
            for section in before.sections {
                guard let last = section.rows.last, let now = after.sections.first(where: { $0.id == section.id })
                else { continue }
                if now.rows.last?.id != last.id { return "the reserved last row \(last.id) is no longer last" }
            }
        }
        if let limits {
            if after.sections.count > max(limits.maxSections, before.sections.count) {
                return "sections grew past the limit to \(after.sections.count)"
            }
            for section in after.sections where section.rows.count > limits.maxRowsPerSection {
                let old = before.sections.first { $0.id == section.id }?.rows.count ?? 0
                if section.rows.count > old {
                    return "section \(section.id) grew past the limit to \(section.rows.count) rows"
                }
            }
        }
        return nil
    }
}
