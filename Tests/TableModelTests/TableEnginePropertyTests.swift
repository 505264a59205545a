import TableModel
import TablecastTesting
import XCTest

/// Property tests of `TableEngine` with random intents, fresh and stale.
final class TableEnginePropertyTests: XCTestCase {
    /// Commits random intents; every successful resolution commits, replicas that apply the batches agree, and
    /// a snapshot plus the batches since rebuilds the same engine.
    func testRandomIntentsCommitAndReplicasAgree() {
        withSeed { generator in
            for _ in 0..<30 {
                var engine = TableEngine(table: RandomTables.table(using: &generator))
                var replica = engine.table
                let snapshot = engine.table
                var committed: [Batch] = []
                for _ in 0..<40 {
                    let base = UInt64.random(in: engine.oldestBase...engine.table.version, using: &generator)
                    let intent = RandomTables.intent(for: engine.table, using: &generator)
                    guard let resolution = try? engine.resolve(intent, base: base) else { continue }
                    try engine.commit(resolution)
                    committed.append(resolution.batch)
                    try replica.apply(resolution.batch)
                    XCTAssertEqual(replica, engine.table)
                }
                let rebuilt = try TableEngine(snapshot: snapshot, replaying: committed)
                XCTAssertEqual(rebuilt.table, engine.table)
            }
        }
    }

    /// A stale delete or edit whose row survived, or a stale section edit whose section survived, resolves to the
    /// same batch as the same intent made at the current version.
    func testStaleIntentsOnSurvivingTargetsActAsAtTheCurrentVersion() {
        withSeed { generator in
            var checked = 0
            for _ in 0..<200 {
                var engine = TableEngine(table: RandomTables.table(using: &generator))
                let base = engine.table
                let rows = base.sections.indices.flatMap { section in
                    base.sections[section].rows.indices.map { RowPath(section: section, row: $0) }
                }
                guard let target = rows.randomElement(using: &generator) else { continue }
                let targetID = base.row(at: target)!.id
                let sectionID = base.sections[target.section].id
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let intent = RandomTables.intent(for: engine.table, using: &generator)
                    guard let resolution = try? engine.resolve(intent) else { continue }
                    var after = engine.table
                    try after.apply(resolution.batch)
                    let survives = after.sections.contains {
                        $0.id == sectionID && $0.rows.contains { $0.id == targetID }
                    }
                    if survives { try engine.commit(resolution) }
                }
                guard engine.table.version > base.version else { continue }
                let sectionNow = engine.table.sections.firstIndex { $0.id == sectionID }!
                let now = RowPath(
                    section: sectionNow, row: engine.table.sections[sectionNow].rows.firstIndex { $0.id == targetID }!)
                let pairs: [(stale: Intent, current: Intent)] = [
                    (.delete(RowRef(target, id: targetID)), .delete(RowRef(now, id: targetID))),
                    (.delete(RowRef(target)), .delete(RowRef(now))),
                    (.edit(RowRef(target, id: targetID), value: "edited"), .edit(RowRef(now), value: "edited")),
                    (
                        .editSection(SectionRef(target.section, id: sectionID), header: .some("H")),
                        .editSection(SectionRef(sectionNow), header: .some("H"))
                    ),
                ]
                for (stale, current) in pairs {
                    let expected = Result { () throws(TableError) in try engine.resolve(current) }
                    let actual = Result { () throws(TableError) in try engine.resolve(stale, base: base.version) }
                    XCTAssertEqual(
                        actual, expected, "\(stale) at \(base.version) vs \(current) at \(engine.table.version)")
                }
                checked += 1
            }
            XCTAssertGreaterThan(checked, 50)
        }
    }

    /// A stale insert lands right after the row that preceded it at its base; only rows created after the base
    /// (committed into the same gap earlier) may come between them.
    func testStaleInsertsStayAfterTheirPredecessor() {
        withSeed { generator in
            var checked = 0
            for _ in 0..<200 {
                var engine = TableEngine(table: RandomTables.table(using: &generator))
                let base = engine.table
                let rows = base.sections.indices.flatMap { section in
                    base.sections[section].rows.indices.map { RowPath(section: section, row: $0) }
                }
                guard let predecessor = rows.randomElement(using: &generator) else { continue }
                let predecessorID = base.row(at: predecessor)!.id
                let baseIDs = Set(base.sections.flatMap { $0.rows.map(\.id) })
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let intent = RandomTables.intent(for: engine.table, using: &generator)
                    if case .move = intent { continue }
                    guard let resolution = try? engine.resolve(intent) else { continue }
                    var after = engine.table
                    try after.apply(resolution.batch)
                    if after.sections.contains(where: { $0.rows.contains { $0.id == predecessorID } }) {
                        try engine.commit(resolution)
                    }
                }
                let insert = Intent.insert(
                    at: RowPath(section: predecessor.section, row: predecessor.row + 1), row: RowContent(value: "late"))
                let resolution = try engine.resolve(insert, base: base.version)
                try engine.commit(resolution)
                let at = resolution.insertedRows[0]
                let section = engine.table.sections[at.section].rows
                let predecessorRow = try XCTUnwrap(section.firstIndex { $0.id == predecessorID })
                XCTAssertLessThan(predecessorRow, at.row)
                XCTAssertTrue(section[(predecessorRow + 1)..<at.row].allSatisfy { !baseIDs.contains($0.id) })
                checked += 1
            }
            XCTAssertGreaterThan(checked, 50)
        }
    }

    /// A random valid batch sent as a client batch resolves to the same table as applying it; sent stale, it
    /// either is refused with a wire error or commits, and every replica agrees.
    func testRandomClientBatchesFreshAndStale() {
        withSeed { generator in
            var committedStale = 0
            for _ in 0..<300 {
                var engine = TableEngine(table: RandomTables.table(using: &generator))
                let base = engine.table
                let batch = RandomTables.validBatch(for: base, using: &generator)
                let client = RandomTables.clientBatch(batch, base, using: &generator)
                var expected = base
                try expected.apply(batch)
                let fresh = try engine.resolve(.batch(client))
                var applied = base
                try applied.apply(fresh.batch)
                // Ids are assigned in entry order, which the generator does not follow, so new ids are masked.
                XCTAssertEqual(Self.masked(applied, base), Self.masked(expected, base), "\(client)")

                for _ in 0..<Int.random(in: 1...5, using: &generator) {
                    guard
                        let resolution = try? engine.resolve(RandomTables.intent(for: engine.table, using: &generator))
                    else { continue }
                    try engine.commit(resolution)
                }
                do {
                    let stale = try engine.resolve(.batch(client), base: base.version)
                    var replica = engine.table
                    try engine.commit(stale)
                    try replica.apply(stale.batch)
                    XCTAssertEqual(replica, engine.table)
                    committedStale += 1
                } catch {
                    let codes: [TableError.Code?] = [.conflict, .outOfRange, .invalidBatch, .limitExceeded]
                    XCTAssert(codes.contains((error as? TableError)?.code), "\(error)")
                }
            }
            XCTAssertGreaterThan(committedStale, 30)
        }
    }

    /// With `withinSection` and `reserveLastRow`, whatever intents are committed (at any base), rows never change section
    /// through a move and every section's placeholder (its last row) stays last.
    func testRulesHoldUnderRandomIntents() {
        withSeed { generator in
            for _ in 0..<60 {
                var table = RandomTables.table(using: &generator)
                table.rules = TableRules(moves: .withinSection, reserveLastRow: true)
                var engine = TableEngine(table: table)
                for _ in 0..<30 {
                    let intent = RandomTables.intent(for: engine.table, using: &generator)
                    let base = UInt64.random(in: engine.oldestBase...engine.table.version, using: &generator)
                    guard let resolution = try? engine.resolve(intent, base: base) else { continue }
                    let before = engine.table
                    try engine.commit(resolution)
                    XCTAssertNil(
                        RandomTables.brokenRule(before: before, after: engine.table, batch: resolution.batch),
                        "\(intent)")
                }
            }
        }
    }

    /// The sections with every id that `base` does not have replaced by `*`.
    static func masked(_ table: Table, _ base: Table) -> [Section] {
        let known = Set(base.sections.flatMap { [$0.id] + $0.rows.map(\.id) })
        return table.sections.map { section in
            var section = section
            if !known.contains(section.id) { section.id = "*" }
            for index in section.rows.indices where !known.contains(section.rows[index].id) {
                section.rows[index].id = "*"
            }
            return section
        }
    }
}
