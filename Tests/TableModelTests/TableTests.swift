import TableModel
import XCTest

/// The source documents' worked examples, applied as committed batches.
final class TableTests: XCTestCase {
    func testStatesListFromListing7_8() throws {
        var table = Table(contents: [
            SectionContent(
                rows: ["Arizona", "California", "Delaware", "New Jersey", "Washington"].map {
                    RowContent(value: .string($0))
                })
        ])
        let next = table.nextID
        try table.apply(
            Batch(
                deleteRows: [RowPath(section: 0, row: 2), RowPath(section: 0, row: 4)],
                insertRows: [
                    .init(at: RowPath(section: 0, row: 0), row: Row(id: "r\(next)", value: "Alaska")),
                    .init(at: RowPath(section: 0, row: 3), row: Row(id: "r\(next + 1)", value: "Georgia")),
                    .init(at: RowPath(section: 0, row: 5), row: Row(id: "r\(next + 2)", value: "Virginia")),
                ]))
        XCTAssertEqual(
            table.sections[0].rows.map(\.value),
            ["Alaska", "Arizona", "California", "Georgia", "New Jersey", "Virginia"])
        XCTAssertEqual(table.sections[0].rows.map(\.id), ["r7", "r2", "r3", "r8", "r5", "r9"])
        XCTAssertEqual(table.version, 1)
        XCTAssertEqual(table.nextID, 10)
    }

    func testThreeSectionsOfThreeRowsFromFigure7_2() throws {
        var table = Table(
            contents: (0..<3).map { section in
                SectionContent(
                    header: "S\(section)", rows: (0..<3).map { RowContent(value: .string("\(section).\($0)")) })
            })
        try table.apply(
            Batch(
                deleteSections: [1], deleteRows: [RowPath(section: 0, row: 1)],
                insertRows: [.init(at: RowPath(section: 1, row: 1), row: Row(id: "r13", value: "new"))]))
        XCTAssertEqual(
            table,
            Table(
                sections: [
                    Section(id: "s1", header: "S0", rows: [Row(id: "r2", value: "0.0"), Row(id: "r4", value: "0.2")]),
                    Section(
                        id: "s9", header: "S2",
                        rows: [
                            Row(id: "r10", value: "2.0"), Row(id: "r13", value: "new"), Row(id: "r11", value: "2.1"),
                            Row(id: "r12", value: "2.2"),
                        ]),
                ], version: 1, nextID: 14))
    }

    func testMovingSection0To2FromCookbook4_7() throws {
        var table = Table(contents: ["A", "B", "C"].map { SectionContent(header: $0) })
        try table.apply(Batch(moveSections: [.init(from: 0, to: 2)]))
        XCTAssertEqual(table.sections.map(\.header), ["B", "C", "A"])
        XCTAssertEqual(table.sections.map(\.id), ["s2", "s3", "s1"])
    }

    func testMovingRowsWithinAndAcrossSectionsFromCookbook4_7() throws {
        var table = Table(
            contents: (1...3).map { section in
                SectionContent(rows: (1...3).map { RowContent(value: .string("Section \(section) Cell \($0)")) })
            })
        try table.apply(Batch(moveRows: [.init(from: RowPath(section: 0, row: 0), to: RowPath(section: 0, row: 1))]))
        XCTAssertEqual(
            table.sections[0].rows.map(\.value), ["Section 1 Cell 2", "Section 1 Cell 1", "Section 1 Cell 3"])
        try table.apply(Batch(moveRows: [.init(from: RowPath(section: 0, row: 1), to: RowPath(section: 1, row: 0))]))
        XCTAssertEqual(table.sections[0].rows.map(\.value), ["Section 1 Cell 2", "Section 1 Cell 3"])
        XCTAssertEqual(
            table.sections[1].rows.map(\.value),
            ["Section 1 Cell 1", "Section 2 Cell 1", "Section 2 Cell 2", "Section 2 Cell 3"])
    }

    func testDeletingTheOddNumbersSectionAndEveryNumberAbove2FromCookbook4_8() throws {
        let numbers = Table(contents: [
            SectionContent(header: "Even Numbers", rows: [0, 2, 4, 6].map { RowContent(value: .number(Double($0))) }),
            SectionContent(header: "Odd Numbers", rows: [1, 3, 5, 7].map { RowContent(value: .number(Double($0))) }),
        ])
        var withoutOdd = numbers
        try withoutOdd.apply(Batch(deleteSections: [1]))
        XCTAssertEqual(withoutOdd.sections.map(\.header), ["Even Numbers"])
        XCTAssertEqual(withoutOdd.sections[0].rows.map(\.value), [0, 2, 4, 6])

        var small = numbers
        try small.apply(
            Batch(
                deleteRows: [[0, 2], [0, 3], [1, 1], [1, 2], [1, 3]].map { RowPath(section: $0[0], row: $0[1]) }))
        XCTAssertEqual(small.sections.map { $0.rows.map(\.value) }, [[0, 2], [1]])
    }

    func testFailedApplyLeavesTheTableUnchanged() {
        var table = Table(contents: [SectionContent(rows: [RowContent(value: 1)])])
        let before = table
        XCTAssertThrowsError(
            try table.apply(
                Batch(
                    deleteRows: [RowPath(section: 0, row: 0)],
                    reloadRows: [.init(at: RowPath(section: 0, row: 0), value: 2)])))
        XCTAssertEqual(table, before)
    }
}
