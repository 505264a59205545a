import TableModel
import XCTest

/// Property tests of the rules with random tables and random batches: lowered limits, and retargeting.
final class TableEngineRulesPropertyTests: XCTestCase {
    /// Whatever limits are set below a table's content, every intent resolves or is refused with a TableError,
    /// nothing committed grows a quantity past its limit, and the log replays under the lowered limits.
    func testLoweredLimitsNeverTrapOnlyRefuseGrowthAndReplay() {
        withSeed { generator in
            for _ in 0..<60 {
                var engine = TableEngine(table: RandomTables.table(using: &generator))
                let snapshot = engine.table
                var committed: [Batch] = []
                let rules = TableRules(
                    maxSections: Int.random(in: 1...3, using: &generator),
                    maxRowsPerSection: Int.random(in: 1...3, using: &generator),
                    maxValueBytes: Int.random(in: 1...8, using: &generator))
                engine.setRules(rules)
                for _ in 0..<30 {
                    let intent: Intent =
                        Bool.random(using: &generator)
                        ? RandomTables.intent(for: engine.table, using: &generator)
                        : .batch(
                            RandomTables.clientBatch(
                                RandomTables.validBatch(for: engine.table, using: &generator), engine.table,
                                using: &generator))
                    let base = UInt64.random(in: engine.oldestBase...engine.table.version, using: &generator)
                    guard let resolution = try? engine.resolve(intent, base: base) else { continue }
                    let before = engine.table
                    try engine.commit(resolution)
                    committed.append(resolution.batch)
                    XCTAssertNil(
                        RandomTables.brokenRule(
                            before: before, after: engine.table, batch: resolution.batch, limits: rules),
                        "\(intent)")
                }
                var lowered = snapshot
                lowered.rules = rules
                let replayed = try TableEngine(snapshot: lowered, replaying: committed)
                XCTAssertEqual(replayed.table, engine.table)
            }
        }
    }

    /// A batch that is valid as proposed is accepted under `withinSection` (and `reserveLastRow`): retargeting
    /// never makes it collide or leave a gap; only the reserved rows themselves may be refused.
    func testRetargetingKeepsValidBatchesValid() {
        withSeed { generator in
            var accepted = 0
            for _ in 0..<300 {
                var table = RandomTables.table(using: &generator)
                let reserveLastRow = Bool.random(using: &generator)
                table.rules = TableRules(moves: .withinSection, reserveLastRow: reserveLastRow)
                let engine = TableEngine(table: table)
                let client = RandomTables.clientBatch(
                    RandomTables.validBatch(for: table, using: &generator), table, using: &generator)
                do {
                    let resolution = try engine.resolve(.batch(client))
                    var replica = table
                    try replica.apply(resolution.batch)
                    for move in resolution.batch.moveRows {
                        XCTAssertEqual(
                            replica.sections[move.to.section].id, table.sections[move.from.section].id, "\(client)")
                    }
                    accepted += 1
                } catch {
                    let allowed: [TableError.Code?] = reserveLastRow ? [.notEditable, .notMovable] : []
                    XCTAssert(allowed.contains((error as? TableError)?.code), "\(client): \(error)")
                }
            }
            XCTAssertGreaterThan(accepted, 100)
        }
    }
}
