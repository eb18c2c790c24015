// The shared test vectors (tests/vectors/*.json, see its README), run
// through the C ABI's JSON entry points (no C++ wrapper): each vector's
// whole answer, as canonical JSON, must equal its `answer` byte for byte.
// C++ only for reading JSON (nlohmann); every call is the plain C API.
#include <waitfor.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

using json = nlohmann::json;  // keys kept sorted: canonical order

namespace {

// Whole numbers below 2^53 as integers (JavaScript cannot tell 2.0 from 2).
json canonical_numbers(const json &v) {
    if (v.is_object() || v.is_array()) {
        json out = v;
        for (auto &item : out) item = canonical_numbers(item);
        return out;
    }
    if (v.is_number_float()) {
        double d = v.get<double>();
        if (std::floor(d) == d && std::fabs(d) < 9007199254740992.0) return static_cast<int64_t>(d);
    }
    return v;
}

std::string canonical(const json &v) { return canonical_numbers(v).dump(); }

// Takes a library string and frees it.
std::string take(char *text) {
    std::string s = text ? text : "";
    waitfor_string_free(text);
    return s;
}

json error_of(char *error_json) {
    json detail = json::parse(take(error_json));
    return {{"error",
             {{"code", detail["code"]}, {"field", detail["field"]}, {"rule", detail["rule"]},
              {"message", detail["message"]}}}};
}

// The vector's whole answer, through the C call its kind names.
json answer(const json &vector) {
    char *out = nullptr, *error = nullptr;
    std::string kind = vector.value("kind", "");
    if (kind.empty()) {
        std::string text = vector.dump();
        if (waitfor_simulate(text.data(), text.size(), &out, &error) != WAITFOR_OK) return error_of(error);
        return json::parse(take(out));
    }
    if (kind == "spec") {
        std::string spec = vector["spec"].dump();
        if (waitfor_check_spec(spec.data(), spec.size(), &error) != WAITFOR_OK) return error_of(error);
        return {{"ok", true}};
    }
    if (kind == "arguments") {
        std::string tool = vector["tool"], args = vector["arguments"].dump();
        if (waitfor_tool_check(tool.data(), tool.size(), args.data(), args.size(), nullptr, 0, &out, &error) !=
            WAITFOR_OK)
            return error_of(error);
        return {{"ok", take(out)}};
    }
    if (kind == "profile") {
        std::string name = vector["lookup"];
        if (waitfor_profile_find(name.data(), name.size(), &out, &error) != WAITFOR_OK) return error_of(error);
        json def = json::parse(take(out));
        return {{"ok", {{"profile", def["profile"]}, {"tool", def["tool"]["name"]}}}};
    }
    if (kind == "pane_id") {
        std::string pane = vector["pane_id"];
        uint32_t number = 0;
        if (waitfor_pane_id_parse(pane.data(), pane.size(), &number, &error) != WAITFOR_OK) return error_of(error);
        return {{"ok", number}};
    }
    if (kind == "duration") {
        if (vector.contains("parse")) {
            std::string text = vector["parse"];
            uint64_t ms = 0;
            if (waitfor_duration_parse(text.data(), text.size(), &ms, &error) != WAITFOR_OK) return error_of(error);
            return {{"ok", ms}};
        }
        // "NaN", "Infinity" and "-Infinity" stand for the numbers JSON cannot hold.
        const json &given = vector["format"];
        double ms = given.is_string() ? std::strtod(given.get<std::string>().c_str(), nullptr) : given.get<double>();
        if (waitfor_duration_format_number(ms, &out, &error) != WAITFOR_OK) return error_of(error);
        return {{"ok", take(out)}};
    }
    if (kind == "envelope") {
        std::string envelope = vector["envelope"].dump();
        if (waitfor_ouro_validate_wait(envelope.data(), envelope.size(), &out, &error) != WAITFOR_OK)
            return error_of(error);
        return json::parse(take(out));
    }
    return {{"unknown kind", kind}};
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
        return 2;
    }
    std::vector<std::string> files;
    DIR *dir = opendir(argv[1]);
    if (!dir) return 2;
    for (dirent *e; (e = readdir(dir)) != nullptr;) {
        std::string name = e->d_name;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) files.push_back(name);
    }
    closedir(dir);
    int ran = 0, failed = 0;
    for (const auto &file : files) {
        std::ifstream in(std::string(argv[1]) + "/" + file);
        std::stringstream text;
        text << in.rdbuf();
        const json doc = json::parse(text.str());
        for (const auto &vector : doc["vectors"]) {
            std::string got = canonical(answer(vector)), want = canonical(vector["answer"]);
            ran++;
            if (got != want) {
                failed++;
                std::fprintf(stderr, "%s / %s:\n  got  %s\n  want %s\n", file.c_str(),
                             vector["name"].get<std::string>().c_str(), got.c_str(), want.c_str());
            }
        }
    }
    // The canonical form itself.
    json sample = json::parse(R"({"b": [2.0, 0.5, -3], "a": {"y": "\n", "x": null}})");
    if (canonical(sample) != R"({"a":{"x":null,"y":"\n"},"b":[2,0.5,-3]})") {
        std::fprintf(stderr, "canonical JSON is wrong: %s\n", canonical(sample).c_str());
        failed++;
    }
    std::printf("vectors: %d ran, %d failed\n", ran, failed);
    return failed == 0 && ran >= 250 ? 0 : 1;
}
