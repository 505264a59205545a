// Timings of the table model's hot paths, printed as figures: applying a 100-entry batch to a 100,000-row
// section, rebasing an intent 1,000 versions behind, and rebasing single-row intents 250 versions behind in
// small tables (the server under load), and our JSON against Foundation's on the server's messages (JSONBenchmark).
// Build with `swift build -c release --product table-model-bench` and run `.build/release/table-model-bench`, or
// `.build/release/table-model-bench rebase-small` for one group (groups: apply, rebase-deep, rebase-small, json);
// `table-model-bench count PATH N` is the untimed workload of scripts/instruction-counts.py (InstructionCounts).

import TableModel
import TablecastTesting

/// Times `body` once per iteration (after `prepare`, which is not timed) and prints the median, p90 and maximum.
func measure(_ name: String, iterations: Int, prepare: () throws -> Void = {}, _ body: () throws -> Void) rethrows {
    let clock = ContinuousClock()
    var samples: [Duration] = []
    for _ in 0..<iterations {
        try prepare()
        samples.append(try clock.measure(body))
    }
    samples.sort()
    func micros(_ duration: Duration) -> String {
        let value = duration / .microseconds(1)
        return String(Int((value * 10).rounded())).inserting(".") + " µs"
    }
    print(
        "\(name): median \(micros(samples[samples.count / 2])), p90 \(micros(samples[samples.count * 9 / 10])), "
            + "max \(micros(samples[samples.count - 1])) over \(iterations) runs")
}

extension String {
    /// Formats a tenths count as a decimal: "123" → "12.3".
    func inserting(_ point: Character) -> String {
        let digits = count < 2 ? String(repeating: "0", count: 2 - count) + self : self
        return String(digits.dropLast()) + String(point) + String(digits.suffix(1))
    }
}

@main
enum Benchmark {
    static func main() throws {
        let groups: [(name: String, run: () throws -> Void)] = [
            ("apply", applyBatches), ("rebase-deep", rebaseDeep), ("rebase-small", rebaseSmall), ("json", json),
        ]
        let selected = CommandLine.arguments.dropFirst()
        if selected.first == "count" { return try InstructionCounts.run(Array(selected.dropFirst())) }
        for group in groups where selected.isEmpty || selected.contains(group.name) { try group.run() }
    }

    /// Applying and resolving 100-entry batches on a 100,000-row section.
    static func applyBatches() throws {
        var random = SeededGenerator(seed: 42)
        let rowCount = 100_000

        // The replica path: validate + apply in place.
        var table = Table(contents: [
            SectionContent(rows: (0..<rowCount).map { RowContent(value: .number(Double($0))) })
        ])
        var batch = Batch()
        func deletesAndInserts() {
            // 50 deletions and 50 insertions at random places keep the section at 100,000 rows across runs.
            batch = Batch(
                deleteRows: Array(0..<rowCount).shuffled(using: &random).prefix(50).map {
                    RowPath(section: 0, row: $0)
                },
                insertRows: Array(0..<rowCount).shuffled(using: &random).prefix(50).enumerated().map { offset, row in
                    .init(
                        at: RowPath(section: 0, row: row),
                        row: Row(id: "r\(table.nextID + UInt64(offset))", value: "new"))
                })
        }
        try measure(
            "apply 50 deletes + 50 inserts to a 100,000-row section", iterations: 200, prepare: deletesAndInserts
        ) {
            try table.apply(batch)
        }
        func mixed() {
            // 25 of each row operation: deletions, insertions, reloads and moves, all at random places.
            let old = Array(0..<rowCount).shuffled(using: &random).prefix(75).map { RowPath(section: 0, row: $0) }
            let new = Array(0..<rowCount).shuffled(using: &random).prefix(50).map { RowPath(section: 0, row: $0) }
            batch = Batch(
                deleteRows: Array(old[0..<25]),
                insertRows: new[0..<25].enumerated().map { offset, path in
                    .init(at: path, row: Row(id: "r\(table.nextID + UInt64(offset))", value: "new"))
                },
                reloadRows: old[25..<50].map { .init(at: $0, value: "reloaded") },
                moveRows: zip(old[50..<75], new[25..<50]).map { .init(from: $0, to: $1) })
        }
        try measure(
            "apply 25 deletes + 25 inserts + 25 reloads + 25 moves to a 100,000-row section", iterations: 200,
            prepare: mixed
        ) {
            try table.apply(batch)
        }

        // The server path for the same size: resolve a 100-entry client batch, then commit it.
        var engine = TableEngine(table: table)
        var client = ClientBatch()
        try measure(
            "resolve + commit a 100-entry client batch on a 100,000-row section", iterations: 200,
            prepare: {
                let rows = engine.table.sections[0].rows.count
                client = ClientBatch(
                    deleteRows: Array(0..<rows).shuffled(using: &random).prefix(50).map {
                        RowRef(RowPath(section: 0, row: $0))
                    },
                    insertRows: Array(0..<rows).shuffled(using: &random).prefix(50).map {
                        .init(at: RowPath(section: 0, row: $0), row: RowContent(value: "new"))
                    })
            },
            { try engine.commit(engine.resolve(.batch(client))) })
    }

    /// Rebasing intents 1,000 versions behind in a table of 10 sections of 10,000 rows.
    static func rebaseDeep() throws {
        var random = SeededGenerator(seed: 42)
        // 1,000 single-row intents are committed after the client's base.
        var engine = TableEngine(
            table: Table(
                contents: (0..<10).map { _ in
                    SectionContent(rows: (0..<10_000).map { RowContent(value: .number(Double($0))) })
                }))
        let base = engine.table.version
        let baseTable = engine.table
        for step in 0..<1_000 {
            let section = Int.random(in: 0..<10, using: &random)
            let rows = engine.table.sections[section].rows.count
            let intent: Intent
            switch step % 4 {
            case 0:
                intent = .insert(
                    at: RowPath(section: section, row: Int.random(in: 0...rows, using: &random)),
                    row: RowContent(value: "i"))
            case 1: intent = .delete(RowRef(RowPath(section: section, row: Int.random(in: 0..<rows, using: &random))))
            case 2:
                intent = .edit(
                    RowRef(RowPath(section: section, row: Int.random(in: 0..<rows, using: &random))), value: "e")
            default:
                intent = .move(
                    from: RowRef(RowPath(section: section, row: Int.random(in: 0..<rows, using: &random))),
                    to: RowPath(
                        section: Int.random(in: 0..<10, using: &random), row: Int.random(in: 0..<rows, using: &random)))
            }
            try engine.commit(engine.resolve(intent))
        }
        // A target that survived the 1,000 batches, named as the client saw it at the base.
        let survivors = Set(engine.table.sections.flatMap { $0.rows.map(\.id) })
        let target = (0..<10_000).lazy.map { RowPath(section: 3, row: $0) }.first {
            survivors.contains(baseTable.row(at: $0)!.id)
        }!
        let targetID = baseTable.row(at: target)!.id
        print("history: \(engine.table.version - base) batches since the base")
        try measure("rebase an edit (with id) 1,000 versions behind", iterations: 500) {
            _ = try engine.resolve(.edit(RowRef(target, id: targetID), value: "stale edit"), base: base)
        }
        try measure("rebase an insert 1,000 versions behind", iterations: 500) {
            _ = try engine.resolve(
                .insert(at: RowPath(section: target.section, row: target.row + 1), row: RowContent(value: "x")),
                base: base)
        }
        try measure("rebase a move 1,000 versions behind", iterations: 500) {
            _ = try engine.resolve(
                .move(from: RowRef(target, id: targetID), to: RowPath(section: 5, row: 10)), base: base)
        }
        try measure("rebase a 10-entry batch 1,000 versions behind", iterations: 200) {
            _ = try? engine.resolve(
                .batch(
                    ClientBatch(
                        deleteRows: (0..<5).map { RowRef(RowPath(section: 7, row: $0 * 100)) },
                        insertRows: (0..<5).map {
                            .init(at: RowPath(section: 2, row: $0 * 50), row: RowContent(value: "b"))
                        })),
                base: base)
        }
    }

    /// Rebasing single-row intents 250 versions behind, as a server under load sees them (16 writers with 16
    /// intents in flight each): 250 mixed single-row intents are committed after the base, in a table of 10
    /// sections of 10 rows and in one of 1 section of 100 rows.
    static func rebaseSmall() throws {
        for (sections, rows) in [(10, 10), (1, 100)] {
            var random = SeededGenerator(seed: 7)
            let shape = "\(sections) × \(rows) table"
            var engine = TableEngine(
                table: Table(
                    contents: (0..<sections).map { _ in
                        SectionContent(rows: (0..<rows).map { RowContent(value: .number(Double($0))) })
                    }))
            let base = engine.table.version
            let baseTable = engine.table
            for step in 0..<250 {
                let section = Int.random(in: 0..<sections, using: &random)
                let count = engine.table.sections[section].rows.count
                func anyRow() -> RowRef {
                    RowRef(RowPath(section: section, row: Int.random(in: 0..<count, using: &random)))
                }
                let intent: Intent
                // An empty section gets an insert, whatever the step.
                switch count == 0 ? 0 : step % 4 {
                case 0:
                    intent = .insert(
                        at: RowPath(section: section, row: Int.random(in: 0...count, using: &random)),
                        row: RowContent(value: "i"))
                case 1: intent = .delete(anyRow())
                case 2: intent = .edit(anyRow(), value: "e")
                default:
                    let to = Int.random(in: 0..<sections, using: &random)
                    let limit = engine.table.sections[to].rows.count - (to == section ? 1 : 0)
                    intent = .move(
                        from: anyRow(), to: RowPath(section: to, row: Int.random(in: 0...limit, using: &random)))
                }
                try engine.commit(engine.resolve(intent))
            }
            // Targets that survived the 250 batches, named as the client saw them at the base.
            let survivors = Set(engine.table.sections.flatMap { $0.rows.map(\.id) })
            let targets = baseTable.sections.indices.flatMap { section in
                baseTable.sections[section].rows.indices.map { RowPath(section: section, row: $0) }
            }.filter { survivors.contains(baseTable.row(at: $0)!.id) }
            let target = targets[targets.count / 2]
            let targetID = baseTable.row(at: target)!.id
            let other = targets[targets.count / 3]
            let otherID = baseTable.row(at: other)!.id
            print("history: \(engine.table.version - base) batches since the base in a \(shape)")
            try measure("rebase an edit (with id) 250 versions behind, \(shape)", iterations: 2_000) {
                _ = try engine.resolve(.edit(RowRef(target, id: targetID), value: "stale edit"), base: base)
            }
            try measure("rebase a delete (with id) 250 versions behind, \(shape)", iterations: 2_000) {
                _ = try engine.resolve(.delete(RowRef(other, id: otherID)), base: base)
            }
            try measure("rebase an insert 250 versions behind, \(shape)", iterations: 2_000) {
                _ = try engine.resolve(
                    .insert(at: RowPath(section: target.section, row: target.row + 1), row: RowContent(value: "x")),
                    base: base)
            }
            try measure("rebase a move 250 versions behind, \(shape)", iterations: 2_000) {
                _ = try engine.resolve(
                    .move(from: RowRef(target, id: targetID), to: RowPath(section: other.section, row: other.row)),
                    base: base)
            }
            // The same edit made at the current version: what resolving costs without rebasing, for comparison.
            let current = engine.table.sections.indices.lazy.compactMap { section in
                engine.table.sections[section].rows.firstIndex { $0.id == targetID }.map {
                    RowPath(section: section, row: $0)
                }
            }.first!
            try measure("resolve the same edit at the current version, \(shape)", iterations: 2_000) {
                _ = try engine.resolve(.edit(RowRef(current, id: targetID), value: "stale edit"))
            }
        }
    }
}
