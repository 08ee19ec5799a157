"""What each view and endpoint accepts at most: torch-free, so the page (sliders, hints) is built
before PyTorch loads. The logic modules import their limits from here and enforce them.

It sits below everything that checks a limit (the views in ``explore/``, the pretraining engine that
shares the probe's limits, the request budget, the page): it imports nothing of the package."""

# Any text typed into a view (explore.tokens, explore.encoding, explore.fill_mask)
MAX_CHARS = 200_000  # ~100 KB pastes are fine; beyond this we refuse rather than stall

# Fill-Mask (explore.fill_mask)
MAX_TOP_K = 50
MAX_MASKS = 20
MAX_TARGETS = 20  # target words per request
MAX_TARGET_CHARS = 50  # characters per target word
MAX_WHOLE_WORD_MASKS = 5  # whole-word search runs ~75 short forward passes per mask
MAX_REQUEST_GFLOP = 1_000  # the planned work of one request's extra passes (PLL, whole words): ~10-20 s on 2 cores
MAX_REQUEST_SECONDS = 30.0  # a request still computing then stops with a message (its client may have left)
MAX_LOCAL_REQUEST_SECONDS = 600.0  # the same on a local server (bigger models, one person's machine)
HEAVY_SLOTS = 2  # requests with extra passes computed at once; others are told to try again

# Attention (explore.attention)
MAX_ATTENTION_TOKENS = 128  # beyond this the heatmaps stop being readable

# Inside BERT (explore.inside, explore.inside_output)
MAX_INSIDE_TOKENS = 64  # the step-by-step views expand every token; beyond this they stop being readable
MAX_LENS_TOP_K = 10

# Masking lab (explore.masking_lab)
MAX_LAB_TOKENS = 128  # the lab is for one sentence or two; the engine's blocks are 128 long by default
MAX_EPOCHS = 200
MAX_STATIC_COPIES = 50
MAX_DRAWS = 20_000

# Next-sentence pairs (explore.nsp)
MIN_SEQ_LEN, MAX_SEQ_LEN = 16, 128
MAX_PAIRS = 16
NSP_MAX_CHARS = 20_000  # text the pairs are built from

# Every endpoint (ui.request_limits checks these before any handler runs)
MAX_TEXT_CHARS = 200_000  # a text to look at: far beyond the 512 tokens a model reads
MAX_PROBE_CHARS = 300  # the live run's probe sentence: kept at every evaluation and sent to every page
MAX_PROBE_MASKS = 4  # its [MASK]s: each adds a top-5 row per evaluation
PROBE_WINDOW = 50  # evaluations of the probe a run keeps (and every page's poll sends): the latest
MAX_EXPECTED_CHARS = 50  # the word a probe expects at its first [MASK] (one vocabulary entry)

# Word in context (explore.word_in_context, explore.corpus_neighbours, explore.attribution)
MAX_WIC_WORD_CHARS = 40  # the word looked at
MAX_WIC_SENTENCES = 12  # sentences compared at once (cosines: every pair, at every layer)
MAX_WIC_TOKENS = 64  # tokens per sentence (and per corpus sentence read)
MIN_CORPUS_SENTENCE_CHARS = 15  # corpus "sentences" this short or shorter (headings, list items) are left out
MAX_NEIGHBOURS = 50  # k nearest corpus tokens
MAX_OCCURRENCES = 120  # corpus sentences holding the word, placed in the picture
MAX_INDEX_TOKENS = 8_000  # corpus tokens in one layer's neighbour index (8,000 x H float32: 12 MB at H = 384, 25 MB at 768)
MAX_ATTR_TOKENS = 64  # the attributed sentence
MAX_IG_STEPS = 300  # integrated-gradient steps
