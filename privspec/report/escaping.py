"""User text made safe for each output: LaTeX (every character printed as written, in
OT1 or T1 encoding), Markdown (GitHub and Hugging Face), and paragraphs of free text.

LaTeX needs nothing of the document it is input in: a letter its font encoding lacks is
typeset in T1 (``\\UseTextAccent{T1}``: ą, ę, «, Ð, Þ…, declared by LaTeX whatever the
document's encoding), or with an accent both encodings have (``\\v{A}``), or as its
code point (``[U+0126]``) when no encoding has it, or when LaTeX has not declared T1.

Pure and free of numpy, like ``formatting``; HTML escaping is the standard library's.
"""

from __future__ import annotations

import re
import unicodedata

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': '\\texttt{\\string"}',  # \textquotedbl does not exist in OT1
    "`": r"\textasciigrave{}",
}
# Characters pdflatex's utf8 input encoding does not know in text: typeset them as math.
_LATEX_UNICODE = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon",
    "ϵ": r"\epsilon", "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ι": r"\iota",
    "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu", "µ": r"\mu", "ν": r"\nu", "ξ": r"\xi",
    "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "ς": r"\varsigma", "τ": r"\tau",
    "υ": r"\upsilon", "φ": r"\varphi", "ϕ": r"\phi", "χ": r"\chi", "ψ": r"\psi",
    "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda",
    "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Υ": r"\Upsilon", "Φ": r"\Phi",
    "Ψ": r"\Psi", "Ω": r"\Omega", "≤": r"\leq", "≥": r"\geq", "≠": r"\neq",
    "≈": r"\approx", "×": r"\times", "·": r"\cdot", "±": r"\pm", "∞": r"\infty",
    "−": "-", "→": r"\to", "←": r"\leftarrow", "∈": r"\in", "√": r"\surd",
}
_LATEX_TEXT_UNICODE = {
    "…": r"\ldots{}", "’": "'", "ʼ": "'", "‘": "`", "“": "``", "”": "''", "–": "--", "—": "---",
    "\u00a0": "~", "•": r"\textbullet{}", "€": "EUR", "™": r"\texttrademark{}",
    "©": r"\textcopyright{}", "®": r"\textregistered{}", "°": r"\textdegree{}",
}


_SUPERSCRIPT_DIGITS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5",
                       "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-", "⁺": "+"}
_SUPERSCRIPT_RUN = re.compile("[" + "".join(_SUPERSCRIPT_DIGITS) + "]+")
# Doubled characters that TeX fonts turn into ligatures (-- ---, '' and T1's ,,): break them.
# (`` !` ?` << >> cannot occur: ` < > are escaped.)
_LIGATURE_DOUBLES = frozenset("-',")
#: pdflatex's utf8 input encoding types Latin-1 and Latin Extended-A in both the OT1 and
#: the T1 font encoding, except these (tests/test_render_latex.py compiles every one):
_LATEX_SAFE_MAX = 0x17F
_NOT_IN_OT1 = frozenset("«»ÐÞðþĄąĐđĘęĮįŊŋŲųĦħĸĿŀŉŦŧſ")
#: Letters only the T1 encoding has, as its commands.
_T1_SYMBOLS = {"«": r"\guillemotleft", "»": r"\guillemotright", "Ð": r"\DH", "ð": r"\dh",
               "Þ": r"\TH", "þ": r"\th", "Đ": r"\DJ", "đ": r"\dj", "Ŋ": r"\NG", "ŋ": r"\ng"}
#: Combining marks as the accent commands of both encodings (the ogonek is T1's only).
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=",
            "\u0306": "u", "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H",
            "\u030c": "v", "\u0323": "d", "\u0327": "c", "\u0331": "b"}
_BELOW = frozenset("\u0323\u0327\u0331")
#: Compatibility characters written as what they stand for (``ŉ`` → ``'n``, ``ᵏ`` → a
#: superscript k); other kinds (circled, squared…) keep their code point.
_COMPATIBLE = {"<compat>": "{}", "<font>": "{}", "<super>": r"\textsuperscript{{{}}}",
               "<sub>": r"\textsubscript{{{}}}"}


def escape_latex(text: str, *, starts_line: bool = True) -> str:
    r"""``text`` as LaTeX text that prints exactly the same characters, on one line.

    Covers ``& % $ # _ { } ~ ^ \`` and the ASCII characters that the OT1 and
    T1 encodings typeset as something else (``< > | " `` and the ligatures
    ``--``, ``''``), in a way that works in both encodings; Greek
    letters, superscript digits and common mathematical symbols become math;
    characters pdflatex cannot typeset (beyond Latin Extended-A) are written
    as ``[U+XXXX]`` rather than breaking the build.  Whitespace runs (line
    breaks included) become one space, so that the text is safe inside a macro
    argument; use :func:`latex_paragraphs` for free text.  A value may start a
    line of the output, so :func:`latex_line_start` applies (``starts_line=False``
    for a piece in the middle of a sentence).
    """
    flat = " ".join(str(text).split())
    out: list[str] = []
    position = 0
    while position < len(flat):
        char = flat[position]
        run = _SUPERSCRIPT_RUN.match(flat, position)
        if run:
            digits = "".join(_SUPERSCRIPT_DIGITS[c] for c in run.group())
            out.append(rf"\ensuremath{{^{{{digits}}}}}")
            position = run.end()
            continue
        if char in _LATEX_SPECIALS:
            out.append(_LATEX_SPECIALS[char])
        elif char in _LATEX_UNICODE:
            out.append(rf"\ensuremath{{{_LATEX_UNICODE[char]}}}")
        elif char in _LATEX_TEXT_UNICODE:
            out.append(_LATEX_TEXT_UNICODE[char])
        elif unicodedata.category(char).startswith("C"):
            pass  # control, format and unassigned characters: never meaningful here
        elif ord(char) > _LATEX_SAFE_MAX or char in _NOT_IN_OT1:
            out.append(_latin_letter(char))
        else:
            out.append(char)
            if char in _LIGATURE_DOUBLES and flat[position + 1 : position + 2] == char:
                out.append("{}")
        position += 1
    escaped = "".join(out)
    return latex_line_start(escaped) if starts_line else escaped


def _code_point(char: str) -> str:
    """What pdflatex cannot typeset, said as its code point: ``[U+0126]``."""
    return f"[U+{ord(char):04X}]"


def _only_in_t1(command: str, base: str, char: str) -> str:
    """A letter of the T1 encoding: typeset in T1 when the document has loaded it
    (``\\usepackage[T1]{fontenc}``), as its code point otherwise (OT1 only)."""
    use = (rf"\UseTextAccent{{T1}}{{{command}}}{{{base}}}" if base
           else rf"\UseTextSymbol{{T1}}{{{command}}}")
    return rf"\ifcsname T1\string{command}\endcsname{use}\else{_code_point(char)}\fi{{}}"


def _latin_letter(char: str) -> str:
    """A letter beyond what pdflatex's utf8 types in OT1: an ASCII letter with one accent
    both encodings have (``\\v{A}``), a T1 letter (see :func:`_only_in_t1`), its
    compatibility form (``ŉ`` → ``ʼn``, ``ǅ`` → ``Dž``, ``ᵏ`` → a superscript k) or else
    its code point."""
    if char in _T1_SYMBOLS:
        return _only_in_t1(_T1_SYMBOLS[char], "", char)
    decomposed = unicodedata.normalize("NFD", char)
    base, marks = decomposed[:1], decomposed[1:]
    if base.isascii() and base.isalpha() and len(marks) == 1:
        if marks == "\u0328":
            return _only_in_t1(r"\k", base, char)
        if marks in _ACCENTS:
            letter = "\\" + base if base in "ij" and marks not in _BELOW else base  # \i, \j
            return rf"\{_ACCENTS[marks]}{{{letter}}}"
    kind = unicodedata.decomposition(char).partition(" ")[0]
    compatible = unicodedata.normalize("NFKC", char)
    if kind in _COMPATIBLE and compatible != char:
        return _COMPATIBLE[kind].format(escape_latex(compatible, starts_line=False))
    return _code_point(char)


_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]<>#|~$]|&(?=#?[A-Za-z0-9]+;)")
#: U+2060 WORD JOINER: invisible, no line break, and not a letter, so GitHub's
#: ``@user``, ``@org/team`` and ``#123`` references no longer match.  A backslash does
#: not stop mentions everywhere and an entity (``&#64;``) is decoded before GitHub looks
#: for mentions; the joiner renders the same characters and does not notify anyone.
WORD_JOINER = "\u2060"
#: An ``@`` or ``#`` that GitHub would read as a mention or a reference.
_REFERENCE = re.compile(r"@(?=[A-Za-z0-9])|#(?=[0-9])")
#: Control characters (other than whitespace) and the bidirectional overrides that
#: reorder what a reader sees: dropped.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")
#: The start of an HTML comment (the pull-request comment's marker is one).
_HTML_COMMENT = "<!--"
#: The first colon of a line that starts a workflow command (``::name::``).
_COMMAND_START = re.compile(r"^\s*:(?=:)")


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs (line breaks included) become one space,
    other control characters (terminal escapes) and bidirectional embeddings, overrides
    and isolates are dropped; joiners that scripts need are kept."""
    return " ".join(_CONTROL.sub("", str(text)).split())


def escape_markdown(text: str) -> str:
    """``text`` as inline GitHub-flavoured Markdown that prints the same characters.

    Backslash-escapes what could start emphasis (``* _``), code, a link or an
    image (``[ ]``), raw HTML or an HTML comment (``< >``), an HTML entity (``&``
    before ``name;``), math (``$``, on GitHub), strikethrough (``~``), a heading
    (``#``) or end a table cell (``|``), and the backslash itself; puts a word
    joiner (:data:`WORD_JOINER`) after an ``@`` or ``#`` that would mention someone
    or link an issue, and after the ``<`` of ``<!--`` (no comment marker in the raw
    text).  Line breaks become spaces, since the value is used inline, and control
    characters are dropped (:func:`one_line`); a value that starts a line (a
    paragraph) also goes through :func:`markdown_line_start`.
    """
    flat = _REFERENCE.sub(lambda match: match.group() + WORD_JOINER, _inert(one_line(text)))
    return _MARKDOWN_SPECIAL.sub(lambda match: "\\" + match.group(), flat)


def _inert(text: str) -> str:
    """``text`` without ``<!--`` in the raw Markdown, so that it never holds the
    pull-request comment's marker, and without ``##[`` or a leading ``::``, which a
    GitHub runner reads as a workflow command when the Markdown is printed to a log (a
    word joiner after ``<``, ``##`` or ``:``: the same characters)."""
    text = text.replace(_HTML_COMMENT, "<" + WORD_JOINER + "!--")
    text = text.replace("##[", "##" + WORD_JOINER + "[")
    return _COMMAND_START.sub(lambda match: match.group() + WORD_JOINER, text)


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span on one line that prints the same characters: the
    delimiter is one backtick longer than any run of backticks inside, so no content
    closes it; ``<!--``, ``##[`` and a leading ``::`` are made inert (:func:`_inert`)."""
    flat = _inert(one_line(text))
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def markdown_fenced(text: str) -> str:
    """``text`` (lines) as a fenced code block that its contents cannot close: the fence
    is longer than any run of backticks inside; each line made inert (:func:`_inert`)
    and without control characters."""
    lines = [_inert(_CONTROL.sub("", line)) for line in str(text).splitlines()]
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *lines, fence])


def markdown_paragraphs(text: str) -> list[str]:
    """Escaped paragraphs of a free text (blank lines separate paragraphs), each on one
    line (:func:`escape_markdown`) and safe to start it (:func:`markdown_line_start`)."""
    chunks = re.split(r"\n\s*\n", str(text).strip())
    return [markdown_line_start(escape_markdown(chunk)) for chunk in chunks if chunk.strip()]


def latex_paragraphs(text: str) -> list[str]:
    """Escaped paragraphs of a free text, for LaTeX."""
    chunks = re.split(r"\n\s*\n", str(text).strip())
    return [escape_latex(chunk) for chunk in chunks if chunk.strip()]


def latex_comment(text: str) -> str:
    r"""``text`` for the rest of a LaTeX comment line (after ``%``): on one line.

    Only a real line break (CR or LF) ends a comment; pdflatex skips the rest of the
    line unread, ``^^M`` and ``^^J`` included.  The text is put on :func:`one_line`, and
    ``^^`` is split (``^ ^``) so that even a reader with other catcodes sees no ``^^``
    escape.
    """
    return re.sub(r"\^(?=\^)", "^ ", one_line(text))


#: What would make a line of Markdown a list, a rule or a heading's underline.  (A
#: leading ``::``, a workflow command when the output is printed in a job, is made inert
#: by :func:`escape_markdown` already.)
_MARKDOWN_LINE_START = re.compile(r"[-+=]|[0-9]+(?=[.)])")


def markdown_line_start(text: str) -> str:
    """Escaped inline Markdown (:func:`escape_markdown`) made safe to start a line: a
    leading ``-``, ``+``, ``=`` or ``1.`` would start a list, a rule or a heading's
    underline.  Each is backslash-escaped (``1\\.``), which prints the same character."""
    start = _MARKDOWN_LINE_START.match(text)
    if start is None:
        return text
    if start.group()[0].isdigit():
        return text[: start.end()] + "\\" + text[start.end():]
    return "\\" + text


def latex_line_start(text: str) -> str:
    """Escaped LaTeX (:func:`escape_latex`) made safe to start a line: a leading ``:``
    follows an empty group (``{}::error`` prints ``::error``), so that no line of the
    output starts a GitHub Actions workflow command."""
    return "{}" + text if text.startswith(":") else text


def capfirst(text: str) -> str:
    """``text`` with its first character upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]
