import TableModel
import XCTest

/// The wire and store shapes of tables, batches and intents.
final class TableJSONTests: XCTestCase {
    func testRowAndSectionShapes() throws {
        let row = Row(id: "r2", value: ["n": 1], movable: false)
        XCTAssertEqual(row.json.jsonText, #"{"id":"r2","movable":false,"value":{"n":1}}"#)
        let section = Section(id: "s1", header: "H", rows: [row])
        XCTAssertEqual(
            section.json.jsonText,
            #"{"footer":null,"header":"H","id":"s1","rows":[{"id":"r2","movable":false,"value":{"n":1}}]}"#)
        XCTAssertEqual(try Section(json: section.json), section)
        XCTAssertEqual(try Row(json: ["id": "r1", "value": nil]), Row(id: "r1", value: nil))
    }

    func testRulesShapeAndDefaults() throws {
        XCTAssertEqual(
            TableRules().json.jsonText,
            #"{"deleteConfirmationTitle":"Delete","maxRowsPerSection":100000,"maxSections":10000,"maxValueBytes":65536,"moves":"any","reserveLastRow":false}"#
        )
        XCTAssertEqual(try TableRules(json: [:]), TableRules())
        XCTAssertEqual(
            try TableRules(json: ["moves": "withinSection", "reserveLastRow": true]),
            TableRules(moves: .withinSection, reserveLastRow: true))
    }

    func testTableSnapshotRoundTripsThroughText() throws {
        var table = Table(
            contents: [
                SectionContent(
                    header: "A", footer: "f",
                    rows: [RowContent(value: "x", editable: false), RowContent(value: [1, nil])])
            ],
            rules: TableRules(moves: .none, deleteConfirmationTitle: "Remove"))
        table.version = 7
        let text = table.json.jsonBytes
        XCTAssertEqual(try Table(json: JSONValue(parsing: text)), table)
    }

    func testBatchShapeRoundTrips() throws {
        let batch = Batch(
            deleteSections: [3],
            insertSections: [.init(at: 0, section: Section(id: "s9", rows: [Row(id: "r10", value: 1)]))],
            reloadSections: [.init(at: 1, header: nil, footer: "F")], moveSections: [.init(from: 2, to: 1)],
            deleteRows: [RowPath(section: 1, row: 0)],
            insertRows: [.init(at: RowPath(section: 1, row: 2), row: Row(id: "r11", value: "v"))],
            reloadRows: [.init(at: RowPath(section: 1, row: 1), value: true, editable: false)],
            moveRows: [.init(from: RowPath(section: 1, row: 3), to: RowPath(section: 2, row: 0))])
        XCTAssertEqual(
            batch.json.jsonText,
            #"{"deleteRows":[[1,0]],"deleteSections":[3],"insertRows":[{"at":[1,2],"row":{"id":"r11","value":"v"}}],"#
                + #""insertSections":[{"at":0,"section":{"footer":null,"header":null,"id":"s9","rows":[{"id":"r10","value":1}]}}],"#
                + #""moveRows":[{"from":[1,3],"to":[2,0]}],"moveSections":[{"from":2,"to":1}],"#
                + #""reloadRows":[{"at":[1,1],"editable":false,"value":true}],"reloadSections":[{"at":1,"footer":"F","header":null}]}"#
        )
        XCTAssertEqual(try Batch(json: batch.json), batch)
        XCTAssertEqual(try Batch(json: ["deleteRows": [[0, 1]]]), Batch(deleteRows: [RowPath(section: 0, row: 1)]))
    }

    func testDecodingErrorsNameThePathAndTheProblem() {
        func assertDecodingError(
            _ expression: @autoclosure () throws -> some Any, _ description: String, line: UInt = #line
        ) {
            XCTAssertThrowsError(try expression(), line: line) { error in
                XCTAssertEqual((error as? JSONDecodingError)?.description, description, line: line)
            }
        }
        let table: JSONValue = [
            "version": 1, "nextID": 5, "rules": [:],
            "sections": [
                [
                    "id": "s1", "header": nil, "footer": nil,
                    "rows": [["id": "r2", "value": 1], ["id": 3, "value": 1]],
                ]
            ],
        ]
        assertDecodingError(try Table(json: table), "sections[0].rows[1].id: expected a string, got a number")
        assertDecodingError(try Table(json: ["version": 1, "nextID": 5, "rules": [:]]), "sections: missing")
        assertDecodingError(
            try Table(json: ["version": -1, "nextID": 5, "rules": [:], "sections": []]),
            "version: expected a non-negative integer, got a number")
        assertDecodingError(
            try Table(json: [
                "version": 1, "nextID": 5, "rules": [:], "sections": [["id": "s1", "rows": [], "colour": "red"]],
            ]),
            "sections[0].colour: unknown field")
        assertDecodingError(
            try Table(json: [
                "version": 1, "nextID": 5, "rules": [:],
                "sections": [["id": "s1", "rows": []], ["id": "s1", "rows": []]],
            ]),
            "sections[1].id: duplicate id \"s1\"")
        assertDecodingError(
            try Table(json: ["version": 1, "nextID": 5, "rules": [:], "sections": [["id": "s7", "rows": []]]]),
            "sections[0].id: id \"s7\" is not below nextID 5")
        assertDecodingError(
            try TableRules(json: ["moves": "sideways"]),
            "moves: expected one of \"any\", \"withinSection\", \"none\", got a string")
        assertDecodingError(
            try Batch(json: ["deleteRows": [[0]]]), "deleteRows[0]: expected an index path [section, row], got an array"
        )
        assertDecodingError(try Batch(json: ["moveRows": [["from": [0, 1]]]]), "moveRows[0].to: missing")
        assertDecodingError(
            try Batch(json: ["deleteRows": [[0, 1.5]]]),
            "deleteRows[0][1]: expected a non-negative integer, got a number")
        assertDecodingError(try Batch(json: []), "expected an object, got an array")
    }
}
