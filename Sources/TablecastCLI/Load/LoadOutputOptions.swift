import ArgumentParser
import Foundation

/// The files `tablecast load` writes besides its report on stdout: the series as CSV (`--out`).
struct LoadOutputOptions: ParsableArguments {
    @Option(
        name: .customLong("out"),
        help: ArgumentHelp(
            "Write the run second by second to this CSV file: a header, then a row per second with "
                + LoadSeries.columns.joined(separator: ", ") + " (the README, \"Load testing your deployment\", "
                + "says what each is). The JSON report has the same rows as `series`.",
            valueName: "file.csv"))
    var seriesFile: String?

    func validate() throws {
        // Checked before the run, which may be long: a path that cannot be written would lose its results.
        for (option, path) in [("--out", seriesFile)] {
            guard let path else { continue }
            let folder = (path as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isDirectory),
                isDirectory.boolValue, FileManager.default.isWritableFile(atPath: folder.isEmpty ? "." : folder)
            else {
                throw ValidationError("\(option) '\(path)': no folder '\(folder)' that this user can write to")
            }
        }
    }

    /// Writes the files asked for; a file that cannot be written is said on stderr and exits 1 (the report on
    /// stdout was printed first).
    func write(_ report: LoadReport, verdicts: [LoadReport.Verdict]) throws {
        var files: [(String, String)] = []
        if let seriesFile { files.append((seriesFile, report.series.csv)) }
        for (path, contents) in files {
            do {
                try Data(contents.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                Output.error("tablecast load: cannot write \(path): \(error.localizedDescription)")
                throw ExitCode(1)
            }
        }
    }
}
