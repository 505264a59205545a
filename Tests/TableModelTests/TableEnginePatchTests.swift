import TableModel
import TablecastTesting
import XCTest

/// Merge patches (issue 24): RFC 7386 as a value, the `patch` intent and `patchRows` resolved at commit time, and
/// optimistic prediction and undo of patches.
final class TableEnginePatchTests: XCTestCase {
    private let groceries = Table(contents: [
        SectionContent(rows: [
            RowContent(value: ["title": "Yogurt", "done": false, "qty": 1]),
            RowContent(value: ["title": "Milk", "done": false, "tags": ["dairy": true, "cold": true]]),
            RowContent(value: "plain"),
        ])
    ])

    @discardableResult
    private func commit(_ engine: inout TableEngine, _ intent: Intent, base: UInt64) throws -> Resolution {
        let resolution = try engine.resolve(intent, base: base)
        try engine.commit(resolution)
        return resolution
    }

    private func value(_ engine: TableEngine, _ row: Int) -> JSONValue { engine.table.sections[0].rows[row].value }

    /// The examples of RFC 7386, appendix A.
    func testTheRFCExamples() throws {
        let cases: [(String, String, String)] = [
            (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
            (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
            (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
            (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
            (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
            (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
            (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
            (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
            (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
            (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
            (#"{"a":"foo"}"#, "null", "null"),
            (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
            (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
            (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
            (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
        ]
        for (target, patch, result) in cases {
            XCTAssertEqual(
                try JSONValue(parsing: target).merging(patch: try JSONValue(parsing: patch)),
                try JSONValue(parsing: result), "\(target) + \(patch)")
        }
    }

    /// The undoing patch restores the value and names only what the patch named; a `null` member the patch
    /// changed cannot be restored by a merge patch.
    func testTheUndoingPatchRestoresOnlyWhatThePatchNamed() throws {
        withSeed { generator in
            for _ in 0..<2_000 {
                let value = Self.randomValue(depth: 2, nulls: false, using: &generator)
                let patch = Self.randomValue(depth: 2, nulls: true, using: &generator)
                guard let undoing = value.mergePatch(undoing: patch) else {
                    return XCTFail("no undoing patch of \(patch.jsonText) on \(value.jsonText)")
                }
                XCTAssertEqual(value.merging(patch: patch).merging(patch: undoing), value)
                if case .object(let changes) = patch, case .object = value, case .object(let restores) = undoing {
                    XCTAssertEqual(Set(restores.keys), Set(changes.keys))
                }
            }
        }
        let withNull: JSONValue = ["a": nil, "b": 1]
        XCTAssertNil(withNull.mergePatch(undoing: ["a": 2]))
        XCTAssertEqual(withNull.mergePatch(undoing: ["b": 2]), ["b": 1])
    }

    /// Two clients patch different fields of one row from the same base: both land.
    func testPatchesOfDifferentFieldsFromOneBaseBothLand() throws {
        var engine = TableEngine(table: groceries)
        let yogurt = RowRef(path(0, 0), id: "r2")
        try commit(&engine, .patch(yogurt, patch: ["done": true]), base: 0)
        let bo = try commit(&engine, .patch(yogurt, patch: ["qty": 3]), base: 0)
        XCTAssertEqual(value(engine, 0), ["title": "Yogurt", "done": true, "qty": 3])
        // The update carries the merged value as a reload; the resolution remembers the patch behind it.
        XCTAssertEqual(
            bo.batch.reloadRows, [.init(at: path(0, 0), value: ["title": "Yogurt", "done": true, "qty": 3])])
        XCTAssertEqual(bo.patches, [path(0, 0): ["qty": 3]])
        // An edit replaces the whole value; a later patch from an old base keeps it.
        try commit(&engine, .edit(yogurt, value: ["title": "Skyr"]), base: 2)
        try commit(&engine, .patch(yogurt, patch: ["done": nil, "qty": nil, "note": "greek"]), base: 1)
        XCTAssertEqual(value(engine, 0), ["title": "Skyr", "note": "greek"])
    }

    func testNestedObjectsMergeAndOtherValuesAreReplaced() throws {
        var engine = TableEngine(table: groceries)
        try commit(&engine, .patch(RowRef(path(0, 1)), patch: ["tags": ["cold": nil, "organic": true]]), base: 0)
        XCTAssertEqual(value(engine, 1), ["title": "Milk", "done": false, "tags": ["dairy": true, "organic": true]])
        try commit(&engine, .patch(RowRef(path(0, 2)), patch: ["title": "Plain"]), base: 1)
        XCTAssertEqual(value(engine, 2), ["title": "Plain"])
        try commit(&engine, .patch(RowRef(path(0, 2)), patch: "plain again"), base: 2)
        XCTAssertEqual(value(engine, 2), "plain again")
    }

    func testAPatchThatChangesNothingCommitsNothing() throws {
        let engine = TableEngine(table: groceries)
        let resolution = try engine.resolve(.patch(RowRef(path(0, 0)), patch: ["done": false, "gone": nil]))
        XCTAssertTrue(resolution.isNoop)
        XCTAssertEqual(resolution.patches, [:])
    }

    /// A patch follows its row through what was committed since; one of a deleted row is refused like an edit.
    func testAStalePatchFollowsItsRowAndOneOfADeletedRowIsRefused() throws {
        var engine = TableEngine(table: groceries)
        try commit(&engine, .insert(at: path(0, 0), row: RowContent(value: "first")), base: 0)
        try commit(&engine, .patch(RowRef(path(0, 1), id: "r3"), patch: ["done": true]), base: 0)
        XCTAssertEqual(value(engine, 2), ["title": "Milk", "done": true, "tags": ["dairy": true, "cold": true]])
        try commit(&engine, .delete(RowRef(path(0, 1))), base: 2)
        assertError(
            try engine.resolve(.patch(RowRef(path(0, 0)), patch: ["done": true]), base: 0), .conflict,
            "patch: row [0,0] of version 0 has been deleted since")
        assertError(
            try engine.resolve(.patch(RowRef(path(0, 0), id: "r3"), patch: ["done": true])), .conflict,
            "patch: row [0,0] is r5, not r3")
        assertError(
            try engine.resolve(.patch(RowRef(path(0, 9)), patch: ["done": true])), .outOfRange,
            "patch: row [0,9] does not exist: section 0 has 3 rows before the update")
    }

    func testRulesAndLimitsApplyToTheMergedValue() throws {
        var locked = groceries
        locked.sections[0].rows[0].editable = false
        locked.rules.maxValueBytes = 70
        let engine = TableEngine(table: locked)
        assertError(
            try engine.resolve(.patch(RowRef(path(0, 0)), patch: ["done": true])), .notEditable,
            "patch: row [0,0] is not editable")
        assertError(
            try engine.resolve(.patch(RowRef(path(0, 1)), patch: ["note": .string(String(repeating: "x", count: 20))])),
            .limitExceeded, "patch: value is 93 bytes, more than the limit of 70")
    }

    /// In a batch, patches are `patchRows` entries, validated with the batch's other entries.
    func testPatchesInABatch() throws {
        var engine = TableEngine(table: groceries)
        let batch = ClientBatch(
            deleteRows: [RowRef(path(0, 2))],
            patchRows: [
                .init(row: RowRef(path(0, 0)), patch: ["done": true]),
                .init(row: RowRef(path(0, 1)), patch: ["qty": 2]),
            ])
        let resolution = try commit(&engine, .batch(batch), base: 0)
        XCTAssertEqual(resolution.batch.reloadRows.map(\.at), [path(0, 0), path(0, 1)])
        XCTAssertEqual(value(engine, 0), ["title": "Yogurt", "done": true, "qty": 1])
        XCTAssertEqual(
            value(engine, 1), ["title": "Milk", "done": false, "qty": 2, "tags": ["dairy": true, "cold": true]])
        assertError(
            try engine.resolve(
                .batch(
                    ClientBatch(
                        reloadRows: [.init(row: RowRef(path(0, 0)), value: "x")],
                        patchRows: [.init(row: RowRef(path(0, 0)), patch: ["done": false])]))), .invalidBatch,
            "patchRows[0]: row [0,0] is also reloaded by reloadRows[0]")
        assertError(
            try engine.resolve(.batch(ClientBatch(patchRows: [.init(row: RowRef(path(0, 5)), patch: [:])]))),
            .outOfRange, "patchRows[0]: row [0,5] does not exist: section 0 has 2 rows before the update")
    }

    /// Random patches and edits (and inserts, deletes and moves that shift rows about) from random stale bases:
    /// every committed change lands on the row its client named, and each row's value is its committed patches
    /// and edits applied in version order; a refusal is only ever for a row deleted since.
    func testConcurrentPatchesAndEditsEqualTheCommittedChangesInVersionOrder() {
        withSeed { generator in
            for _ in 0..<40 {
                let rows = (0..<Int.random(in: 1...5, using: &generator)).map { _ in
                    RowContent(value: Self.randomValue(depth: 2, nulls: false, using: &generator))
                }
                var engine = TableEngine(
                    table: Table(contents: [SectionContent(rows: rows), SectionContent(rows: [])]), historyLimit: 8)
                var tables = [engine.table]
                var expected = Dictionary(
                    uniqueKeysWithValues: engine.table.sections.flatMap(\.rows).map { ($0.id, $0.value) })
                for _ in 0..<30 {
                    let base = UInt64.random(in: engine.oldestBase...engine.table.version, using: &generator)
                    let seen = tables[Int(base)]
                    let allRows = seen.sections.indices.flatMap { s in seen.sections[s].rows.indices.map { path(s, $0) }
                    }
                    guard let target = allRows.randomElement(using: &generator) else { break }
                    let id = seen.sections[target.section].rows[target.row].id
                    let ref = RowRef(target, id: Bool.random(using: &generator) ? id : nil)
                    let change = Self.randomValue(depth: 2, nulls: true, using: &generator)
                    let intent: Intent
                    switch Int.random(in: 0..<10, using: &generator) {
                    case 0..<5: intent = .patch(ref, patch: change)
                    case 5, 6: intent = .edit(ref, value: change)
                    case 7: intent = .delete(ref)
                    case 8: intent = .move(from: ref, to: path(Int.random(in: 0...1, using: &generator), 0))
                    default: intent = .insert(at: path(1, 0), row: RowContent(value: ["new": 1]))
                    }
                    let resolution: Resolution
                    do throws(TableError) {
                        resolution = try engine.resolve(intent, base: base)
                    } catch {
                        XCTAssertEqual(error.code, .conflict, "\(intent): \(error)")
                        XCTAssertNil(expected[id], "\(intent) refused though \(id) is still there: \(error)")
                        continue
                    }
                    XCTAssertNoThrow(try engine.commit(resolution))
                    switch intent {
                    case .patch(_, let patch): expected[id] = expected[id]!.merging(patch: patch)
                    case .edit(_, let value, _, _, _): expected[id] = value
                    case .delete: expected[id] = nil
                    default: break
                    }
                    for id in resolution.createdIDs { expected[id] = ["new": 1] }
                    while tables.count <= Int(engine.table.version) { tables.append(engine.table) }
                    let actual = Dictionary(
                        uniqueKeysWithValues: engine.table.sections.flatMap(\.rows).map { ($0.id, $0.value) })
                    XCTAssertEqual(actual, expected, "after \(intent) from version \(base)")
                    if actual != expected { return }
                }
            }
        }
    }

    /// A patch is predicted at once, rebased like the server does, and undone by a patch of only what it
    /// changed: a field another client changed meanwhile keeps their value.
    func testOptimisticPatchesAndTheirUndo() throws {
        var harness = OptimisticHarness(table: groceries, clients: 2)
        let yogurt = RowRef(path(0, 0), id: "r2")
        try harness.submit(0, .patch(yogurt, patch: ["done": true]))
        try harness.submit(0, .patch(yogurt, patch: ["note": "greek"])) // queued
        try harness.submit(1, .patch(yogurt, patch: ["qty": 4, "done": false]))
        harness.serve(1)
        try harness.deliver(0)
        // Client 0's own patches stay on top of the other's.
        XCTAssertEqual(
            harness.clients[0].predicted.sections[0].rows[0].value,
            ["title": "Yogurt", "done": true, "qty": 4, "note": "greek"])
        try harness.settle()
        XCTAssertEqual(
            harness.server.table.sections[0].rows[0].value,
            ["title": "Yogurt", "done": true, "qty": 4, "note": "greek"])
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }

        try harness.submit(1, .patch(yogurt, patch: ["qty": 5]))
        try harness.settle()
        _ = try harness.undo(0) // the note goes, the quantity stays
        try harness.settle()
        XCTAssertEqual(harness.server.table.sections[0].rows[0].value, ["title": "Yogurt", "done": true, "qty": 5])
        _ = try harness.undo(0) // done goes back to what it was before client 0's patch
        try harness.settle()
        XCTAssertEqual(harness.server.table.sections[0].rows[0].value, ["title": "Yogurt", "done": false, "qty": 5])
        _ = try harness.redo(0)
        try harness.settle()
        XCTAssertEqual(harness.server.table.sections[0].rows[0].value, ["title": "Yogurt", "done": true, "qty": 5])
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }
    }

    /// A small random JSON value; objects use a few keys so that patches and values overlap.
    static func randomValue(depth: Int, nulls: Bool, using generator: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 10 : 5), using: &generator) {
        case 0: return nulls ? .null : .bool(false)
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .number(Double(Int.random(in: 0..<4, using: &generator)))
        case 3: return .string(["a", "b"].randomElement(using: &generator)!)
        case 4: return .array([.number(1)])
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let key = ["title", "done", "qty", "tags"].randomElement(using: &generator)!
                members[key] = randomValue(depth: depth - 1, nulls: nulls, using: &generator)
            }
            return .object(members)
        }
    }
}
