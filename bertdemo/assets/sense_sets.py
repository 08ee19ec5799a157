"""A labelled sense set written for this project: six words of two senses each, eight sentences a sense.

Each sense's first :data:`TRAIN_PER_SENSE` sentences make the sense centroids of the sense readout, the
rest are what it is scored on. The Word in context tab starts from the first two sentences of each sense.
Torch-free (plain tuples): the page shows the defaults before PyTorch loads.
"""

from __future__ import annotations

from dataclasses import dataclass

TRAIN_PER_SENSE = 3  # sentences per sense that make its centroid; the other five are scored


@dataclass(frozen=True)
class SenseExample:
    word: str
    sense: str
    sentence: str
    train: bool  # True: builds the centroid; False: scored


_SETS: dict[str, dict[str, tuple[str, ...]]] = {
    "bank": {
        "river": (
            "We sat on the grassy bank of the river and watched the boats.",
            "The flood washed away part of the bank near the old bridge.",
            "Ducks nested along the muddy bank of the stream.",
            "He fished from the bank all afternoon without a single bite.",
            "Willow trees grow on the far bank of the lake.",
            "The canoe drifted toward the steep bank and got stuck.",
            "Otters slid down the bank into the cold water.",
            "She climbed up the bank to get out of the creek.",
        ),
        "money": (
            "I need to go to the bank to deposit my paycheck.",
            "The bank raised its interest rates on savings accounts.",
            "She opened an account at a small local bank.",
            "The bank approved their loan for the new house.",
            "Robbers broke into the bank and emptied the vault.",
            "He works as a teller at the bank downtown.",
            "The central bank announced a change in monetary policy.",
            "My bank charges a fee for every wire transfer.",
        ),
    },
    "bat": {
        "animal": (
            "A bat flew out of the cave at dusk to hunt insects.",
            "The bat hung upside down from the roof of the barn.",
            "Each bat uses echolocation to find moths in the dark.",
            "A small brown bat was sleeping in the attic.",
            "The fruit bat has large eyes and a fox-like face.",
            "Scientists tracked the bat as it flew across the valley.",
            "The bat flapped its leathery wings and vanished into the night.",
            "A colony of bats lives under the bridge, and one bat landed on my window.",
        ),
        "sports": (
            "He swung the bat and hit the ball over the fence.",
            "The player gripped the wooden bat tightly at the plate.",
            "She bought a new aluminum bat for the baseball season.",
            "The cricket bat was made of willow.",
            "He dropped the bat and ran toward first base.",
            "The batter tapped the bat on home plate before the pitch.",
            "A broken bat sent the ball rolling to the shortstop.",
            "The coach handed him a lighter bat to improve his swing.",
        ),
    },
    "spring": {
        "season": (
            "The flowers bloom early in the spring when the weather warms.",
            "We plan to visit Japan in the spring to see the cherry blossoms.",
            "Birds return from the south every spring.",
            "The spring semester starts in late January.",
            "Farmers plant their crops in the spring after the last frost.",
            "It rained almost every day last spring.",
            "The days grow longer in spring and the snow melts.",
            "Spring cleaning is a tradition in many homes.",
        ),
        "coil": (
            "The spring inside the pen pushes the tip back out.",
            "A broken spring made the old mattress uncomfortable.",
            "The mechanic replaced the spring in the car's suspension.",
            "Compress the spring and then release it to launch the ball.",
            "The clock stopped because its main spring snapped.",
            "A steel spring stores energy when it is stretched.",
            "The door closes by itself thanks to a strong spring.",
            "He wound the spring of the toy until it was tight.",
        ),
    },
    "cell": {
        "biology": (
            "Each cell in the body contains a nucleus with DNA.",
            "The cell divides into two identical daughter cells.",
            "Red blood cells carry oxygen, and a white cell fights infection.",
            "The cell membrane controls what enters and leaves.",
            "Under the microscope the plant cell showed a thick wall.",
            "A nerve cell sends electrical signals to the brain.",
            "Cancer begins when a cell grows out of control.",
            "The mitochondria supply the cell with energy.",
        ),
        "prison": (
            "The prisoner was locked in a small cell for the night.",
            "Guards searched every cell in the block for weapons.",
            "He shared a cramped cell with two other inmates.",
            "The jail cell had only a bed and a tiny window.",
            "She spent ten years in a prison cell before her release.",
            "The monk lived in a bare stone cell in the monastery.",
            "The door of the cell slammed shut behind him.",
            "Police held the suspect in a holding cell overnight.",
        ),
    },
    "match": {
        "game": (
            "The football match ended in a draw after extra time.",
            "She won the tennis match in three sets.",
            "Thousands of fans watched the match at the stadium.",
            "The boxing match was postponed because of an injury.",
            "Our team lost the final match of the season.",
            "The chess match lasted more than five hours.",
            "He scored twice in the match against their rivals.",
            "Tickets for the cup match sold out in minutes.",
        ),
        "fire": (
            "She struck a match to light the candle.",
            "He lit the stove with a single match.",
            "The match burned down to his fingers before he dropped it.",
            "Keep the match away from the gasoline.",
            "A wet match will not light no matter how hard you strike it.",
            "The camper used his last match to start the fire.",
            "The box held one match and a folded note.",
            "He blew out the match and tossed it into the ashtray.",
        ),
    },
    "plant": {
        "vegetation": (
            "Water the plant once a week and keep it in the sun.",
            "This plant grows tall flowers in the summer.",
            "The leaves of the plant turned yellow in the cold.",
            "She repotted the plant into a bigger pot.",
            "A cactus is a plant that needs very little water.",
            "The tomato plant produced dozens of red fruits.",
            "Every plant in the garden was eaten by snails.",
            "The rare plant only grows on high mountain slopes.",
        ),
        "factory": (
            "The car plant employs three thousand workers.",
            "A nuclear power plant supplies electricity to the city.",
            "The company closed its steel plant last year.",
            "Workers at the chemical plant went on strike.",
            "The new plant will build batteries for electric cars.",
            "Pollution from the plant reached the nearby river.",
            "The treatment plant cleans the town's waste water.",
            "Engineers inspected the plant after the explosion.",
        ),
    },
}

WORDS: tuple[str, ...] = tuple(_SETS)
DEFAULT_WORD = "bank"


def examples(word: str | None = None) -> list[SenseExample]:
    """Every labelled sentence (of ``word`` only, when given), senses in order, train before scored."""
    out = []
    for w, senses in _SETS.items():
        if word is not None and w != word:
            continue
        for sense, sentences in senses.items():
            out += [SenseExample(w, sense, s, i < TRAIN_PER_SENSE) for i, s in enumerate(sentences)]
    return out


def default_lines(word: str) -> str:
    """The tab's starting sentences for ``word``: two of each sense, one ``sense | sentence`` per line."""
    senses = _SETS.get(word, {})
    return "\n".join(f"{sense} | {s}" for sense, sentences in senses.items() for s in sentences[:2])
