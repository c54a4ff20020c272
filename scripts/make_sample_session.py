"""Regenerates the sample recording in `examples/` (spec 000's session layout) from a script.

A scripted Tuesday morning of the wearer ("I"): breakfast with the roommate Katrina, the
keys and a blue notebook in the hallway, a cappuccino at the Corner Café (where the
notebook is forgotten), and the office with the colleague Marco. Speech is synthesised by
espeak-ng (one voice per speaker), mixed on a 30-second-window timeline so that every line
falls inside the window whose frames show its scene, and encoded by ffmpeg as AAC mono
16 kHz (`audio.m4a`, the full-session file of spec 000). Frames are drawn with Pillow:
16 small JPEGs per window with the place, the people, the objects and on-screen text.

Run by hand (needs `apt-get install -y espeak-ng ffmpeg`); the results are committed:

    python scripts/make_sample_session.py               # examples/sample-session (24 windows)
    python scripts/make_sample_session.py --short       # examples/short-session (4 windows)
    python scripts/make_sample_session.py --evening     # examples/evening-session (20 windows)
    python scripts/make_sample_session.py --next-morning  # examples/next-morning-session (16 windows)

The output depends only on this script and the versions of espeak-ng, ffmpeg and Pillow.
"""

from __future__ import annotations

import argparse
import array
import json
import math
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parent.parent
WINDOW_SECONDS = 30
FRAMES_PER_WINDOW = 16
FRAME_SIZE = (320, 240)
JPEG_QUALITY = 50
AUDIO_BITRATE = "16k"
LEAD_IN_SECONDS = 0.8  # silence at the start of a window before its first line
LINE_GAP_SECONDS = 1.0  # pause between two lines
TAIL_SECONDS = 0.6  # a line must end this long before its window closes

# One espeak-ng voice per speaker: clear, slow (Whisper tiny.en transcribes these well).
VOICES: dict[str, tuple[str, int]] = {
    "Me": ("en-gb-x-rp", 140),
    "Katrina": ("en-gb-x-rp+f2", 140),
    "Emma": ("en-us+f3", 140),
    "Marco": ("en-us+m7", 140),
    "Sophie": ("en-us+f4", 140),
    "Tom": ("en-gb-x-rp+m1", 140),
    "Daniel": ("en-gb-x-rp+m3", 140),
    "Nina": ("en-us+f2", 140),
    "Doctor Lee": ("en-us+m3", 140),
}
WORD_GAP = 2  # espeak-ng -g: pause between words, in 10 ms units
# Where a prop's label is centred, from its left edge (wide furniture is labelled in its middle).
LABEL_CENTRE = {"window": 45, "counter": 100, "table": 100, "fridge": 24, "door": 30, "shelf": 65}


@dataclass(frozen=True)
class Prop:
    """Something drawn in a frame; `frames` is the half-open range of frames that show it."""

    kind: str
    x: int
    y: int
    label: str = ""
    text: tuple[str, ...] = ()
    color: str = "#777777"
    frames: tuple[int, int] = (0, FRAMES_PER_WINDOW)


@dataclass(frozen=True)
class Person:
    """A named person standing in the scene."""

    name: str
    x: int
    shirt: str


@dataclass(frozen=True)
class Scene:
    """One 30-second window: where, who, what is seen, what is said, and what it should teach."""

    key: str
    place: str
    setting: str
    note: str
    lines: tuple[tuple[str, str], ...]
    people: tuple[Person, ...] = ()
    props: tuple[Prop, ...] = ()
    facts: tuple[str, ...] = ()


KATRINA = Person("Katrina", 200, "#c0392b")
MARCO = Person("Marco", 215, "#2e86c1")
EMMA = Person("Emma", 215, "#8e5b3a")

KITCHEN = (
    Prop("window", 30, 40, "window"),
    Prop("counter", 0, 150, "counter", color="#b9a27a"),
    Prop("fridge", 268, 60, "fridge"),
)
HALLWAY = (
    Prop("door", 240, 45, "front door"),
    Prop("shelf", 40, 120, "hallway shelf", color="#8b5a2b"),
)
STREET = (
    Prop("building", 10, 50, "Corner Cafe", color="#6d4c41"),
    Prop("building", 170, 35, "Maple St. 12", color="#90a4ae"),
    Prop("sign", 120, 150, "Maple Street"),
)
CAFE = (
    Prop("board", 8, 38, "MENU", text=("Cappuccino $4.50", "Espresso $3.00", "Croissant $3.20")),
    Prop("counter", 0, 155, "counter", color="#6d4c41"),
)
CAFE_TABLE = (
    Prop("window", 20, 38, "window: Maple Street"),
    Prop("table", 60, 165, "window table", color="#a1887f"),
)
OFFICE = (
    Prop("window", 20, 38, "Northwind Labs, 3rd floor"),
    Prop("table", 30, 165, "my desk", color="#90a4ae"),
)
WHITEBOARD = (
    Prop(
        "board",
        20,
        38,
        "WHITEBOARD",
        text=("Marco: presentation", "Friday 2 pm, whole team", "client from Boston"),
        color="#fafafa",
    ),
    Prop("table", 30, 170, "meeting table", color="#90a4ae"),
)

SCENES: tuple[Scene, ...] = (
    Scene(
        "kitchen-morning",
        "Kitchen",
        "home",
        "Breakfast at home, Katrina is up",
        (
            ("Me", "Good morning. It is Tuesday, and I am making breakfast in the kitchen."),
            ("Katrina", "Good morning! Did you sleep well?"),
            ("Me", "Yes, thanks, Katrina. You are up early today."),
            ("Katrina", "I start work at the bakery at ten."),
        ),
        people=(KATRINA,),
        props=(*KITCHEN, Prop("mug", 120, 132, "coffee mug", color="#ecf0f1")),
        facts=("Katrina is my roommate; she works at a bakery (starts at ten today).",),
    ),
    Scene(
        "kitchen-latte-habit",
        "Kitchen",
        "home",
        "Making my morning cappuccino",
        (
            ("Me", "I always have a cappuccino every morning."),
            ("Katrina", "We are almost out of milk."),
            ("Me", "Then I will buy more milk on the way home tonight."),
        ),
        people=(KATRINA,),
        props=(
            *KITCHEN,
            Prop("carton", 95, 118, "MILK", color="#f5deb3"),
            Prop("mug", 140, 132, "cappuccino", color="#ecf0f1"),
        ),
        facts=("Habit: I have a cappuccino every morning.", "To do: buy milk on the way home."),
    ),
    Scene(
        "kitchen-doctor",
        "Kitchen",
        "home",
        "Katrina reminds me of the doctor",
        (
            ("Katrina", "Do not forget your doctor's appointment. It is tomorrow morning at nine o'clock."),
            ("Me", "Right. The doctor, tomorrow morning at nine o'clock."),
            ("Me", "I will put it in my calendar now."),
        ),
        people=(KATRINA,),
        props=(*KITCHEN, Prop("mug", 140, 132, "cappuccino", color="#ecf0f1")),
        facts=("Plan: doctor's appointment tomorrow (Wednesday 12 March) at 9:00; Katrina reminded me.",),
    ),
    Scene(
        "kitchen-calendar",
        "Kitchen",
        "home",
        "Adding the doctor to my phone calendar",
        (
            ("Me", "Okay. The doctor is in my calendar now."),
            ("Katrina", "I am going to my pottery class tonight, so I will be home late."),
            ("Me", "Okay, have fun at pottery."),
        ),
        people=(KATRINA,),
        props=(
            *KITCHEN,
            Prop("phone", 110, 60, "my phone", text=("CALENDAR", "Wed 12 March", "9:00 Doctor")),
        ),
        facts=("Katrina goes to a pottery class on Tuesday evenings.",),
    ),
    Scene(
        "kitchen-plants",
        "Kitchen",
        "home",
        "Mug in the sink, watering the plants",
        (
            ("Me", "I am putting my coffee mug in the sink."),
            ("Katrina", "Can you water the plants by the window?"),
            ("Me", "Sure. I am watering the plants now."),
        ),
        people=(KATRINA,),
        props=(
            *KITCHEN,
            Prop("sink", 110, 140, "sink"),
            Prop("mug", 125, 132, "mug", color="#ecf0f1", frames=(6, 16)),
            Prop("mug", 250, 195, "mug", color="#ecf0f1", frames=(0, 6)),
            Prop("plant", 45, 88, "plants"),
        ),
        facts=("The plants are by the kitchen window.",),
    ),
    Scene(
        "hallway-keys",
        "Hallway",
        "home",
        "Taking my keys and the blue notebook; spare key stays",
        (
            ("Me", "I am taking my keys and my blue notebook from the hallway shelf."),
            ("Me", "I am leaving the spare key on the hallway shelf for the plumber."),
            ("Katrina", "Okay, the plumber comes at eleven o'clock. Have a good day!"),
        ),
        people=(Person("Katrina", 195, "#c0392b"),),
        props=(
            *HALLWAY,
            Prop("keys", 60, 108, "keys", frames=(0, 6)),
            Prop("keys", 250, 200, "keys", frames=(6, 16)),
            Prop("notebook", 95, 104, "blue notebook", color="#1f4e9c", frames=(0, 8)),
            Prop("notebook", 210, 198, "blue notebook", color="#1f4e9c", frames=(8, 16)),
            Prop("keys", 130, 108, "spare key", frames=(10, 16)),
        ),
        facts=(
            "I took my keys and the blue notebook from the hallway shelf.",
            "The spare key is on the hallway shelf, for the plumber (coming at eleven).",
        ),
    ),
    Scene(
        "street-walk",
        "Maple Street",
        "outside",
        "Walking to Corner Cafe",
        (
            ("Me", "I am walking to the Corner Cafe on Maple Street, like every morning."),
            ("Me", "It is cold and sunny today."),
        ),
        props=STREET,
        facts=("Habit: I walk to Corner Café on Maple Street every morning.",),
    ),
    Scene(
        "cafe-order",
        "Corner Cafe",
        "counter",
        "Ordering from Emma the barista",
        (
            ("Emma", "Good morning! The usual?"),
            ("Me", "Yes please, Emma. A large cappuccino."),
            ("Emma", "You order the same thing every day."),
        ),
        people=(EMMA,),
        props=(*CAFE, Prop("cup", 265, 138, "cappuccino", color="#ffffff", frames=(8, 16))),
        facts=("Emma is the barista at the Corner Café.", "My usual order is a large cappuccino."),
    ),
    Scene(
        "cafe-pay",
        "Corner Cafe",
        "counter",
        "Paying for the cappuccino",
        (
            ("Me", "I always get a cappuccino here before work."),
            ("Emma", "That is four dollars fifty."),
            ("Me", "I am paying with my phone. Thank you, Emma."),
        ),
        people=(Person("Emma", 195, "#8e5b3a"),),
        props=(
            *CAFE,
            Prop("cup", 160, 138, "cappuccino", color="#ffffff"),
            Prop("phone", 228, 60, "pay", text=("PAID", "$4.50"), frames=(8, 16)),
        ),
        facts=("A cappuccino at the Corner Café costs $4.50.",),
    ),
    Scene(
        "cafe-todo",
        "Corner Cafe",
        "window table",
        "Writing my plan for today in the blue notebook",
        (
            ("Me", "I am sitting at the window table, writing my plan for today in my blue notebook."),
            ("Me", "First, finish the budget report. Second, help Marco with his slides."),
        ),
        props=(
            *CAFE_TABLE,
            Prop("notebook", 120, 150, "blue notebook", text=("1. budget report", "2. Marco slides")),
            Prop("cup", 215, 140, "cappuccino", color="#ffffff"),
        ),
        facts=("To do today: finish the budget report; help Marco with his slides.",),
    ),
    Scene(
        "cafe-message",
        "Corner Cafe",
        "window table",
        "Notebook on the table, reading a message from Marco",
        (
            ("Me", "I am putting the blue notebook down on the cafe table to read a message."),
            ("Me", "Marco asks if we can meet at half past nine. I reply yes."),
        ),
        props=(
            *CAFE_TABLE,
            Prop("notebook", 90, 152, "blue notebook", color="#1f4e9c"),
            Prop("phone", 180, 55, "message", text=("Marco:", "meet at 9:30?", "Me: yes!")),
        ),
        facts=("I put the blue notebook down on the café's window table.",),
    ),
    Scene(
        "cafe-leave",
        "Corner Cafe",
        "door",
        "Leaving the cafe (the notebook is still on the table)",
        (
            ("Me", "Time to go. I am leaving the cafe now."),
            ("Emma", "Bye, see you tomorrow!"),
        ),
        people=(Person("Emma", 250, "#8e5b3a"),),
        props=(
            *CAFE_TABLE,
            Prop("notebook", 90, 152, "blue notebook", color="#1f4e9c"),
            Prop("door", 225, 45, "exit"),
        ),
        facts=("The blue notebook was left behind on the café table.",),
    ),
    Scene(
        "office-arrive",
        "Northwind Labs",
        "office, 3rd floor",
        "Arriving at the office, keys into the desk drawer",
        (
            ("Me", "I am at the office. Northwind Labs, third floor."),
            ("Me", "I am putting my keys in the drawer of my desk."),
            ("Me", "Now I am opening my laptop."),
        ),
        props=(
            *OFFICE,
            Prop("drawer", 40, 185, "desk drawer"),
            Prop("keys", 60, 178, "keys", frames=(0, 8)),
            Prop("laptop", 150, 140, "laptop", frames=(10, 16)),
        ),
        facts=("I work at Northwind Labs (third floor).", "My keys are in the drawer of my office desk."),
    ),
    Scene(
        "office-marco-slides",
        "Northwind Labs",
        "my desk",
        "Marco asks for help with his slides",
        (
            ("Marco", "Hey! Thanks for helping with my slides."),
            ("Me", "Sure, Marco. When is your presentation?"),
            ("Marco", "My presentation is on Friday at two in the afternoon, to the whole team."),
        ),
        people=(MARCO,),
        props=(*OFFICE, Prop("laptop", 120, 140, "laptop")),
        facts=(
            "Marco is my colleague.",
            "Plan: Marco's presentation is on Friday (14 March) at 2 pm.",
        ),
    ),
    Scene(
        "office-marco-client",
        "Northwind Labs",
        "my desk",
        "Marco is nervous about the client",
        (
            ("Marco", "I am nervous. The client from Boston will be there."),
            ("Me", "You will be fine. Let us practise on Thursday afternoon."),
        ),
        people=(MARCO,),
        props=(*OFFICE, Prop("laptop", 120, 140, "laptop")),
        facts=(
            "A client from Boston will attend Marco's presentation.",
            "Plan: practise with Marco on Thursday.",
        ),
    ),
    Scene(
        "office-one-coffee",
        "Northwind Labs",
        "my desk",
        "Saying no to a second coffee",
        (
            ("Marco", "Do you want a coffee from the machine?"),
            ("Me", "No thanks. I already had my cappuccino. I only drink one coffee a day."),
            ("Marco", "Only one coffee? Good for you."),
        ),
        people=(MARCO,),
        props=(*OFFICE, Prop("laptop", 120, 140, "laptop"), Prop("cup", 230, 140, "Marco's coffee")),
        facts=("Habit: I only drink one coffee a day.",),
    ),
    Scene(
        "office-notebook-missing",
        "Northwind Labs",
        "my desk",
        "Looking for the blue notebook",
        (
            ("Me", "Let me check my plan for today. Wait, where is my blue notebook?"),
            ("Me", "Oh no. I think I left my blue notebook on the table at the cafe."),
        ),
        props=(*OFFICE, Prop("laptop", 120, 140, "laptop"), Prop("bag", 210, 150, "my bag (no notebook)")),
        facts=("I realised I had left the blue notebook at the café.",),
    ),
    Scene(
        "office-call-cafe",
        "Northwind Labs",
        "phone call",
        "Calling Corner Cafe about the notebook",
        (
            ("Me", "Hi Emma, did I leave a blue notebook on the window table?"),
            ("Emma", "Yes, we found it. We will keep it behind the counter."),
            ("Me", "Thank you. I will pick it up at lunch."),
        ),
        props=(*OFFICE, Prop("phone", 120, 50, "call", text=("Calling", "Corner Cafe", "00:42"))),
        facts=("The blue notebook is kept behind the counter at Corner Café.",),
    ),
    Scene(
        "office-slide-review",
        "Meeting room",
        "Northwind Labs",
        "Reviewing Marco's slides at the whiteboard",
        (
            ("Marco", "Let us review the slides. Slide three shows the budget."),
            ("Me", "The budget numbers on slide three are from last year. Let us change them."),
        ),
        people=(Person("Marco", 230, "#2e86c1"),),
        props=WHITEBOARD,
        facts=("Slide three of Marco's deck has last year's budget numbers.",),
    ),
    Scene(
        "office-late-tomorrow",
        "Meeting room",
        "Northwind Labs",
        "Telling Marco I'll be late tomorrow",
        (
            ("Marco", "I will fix slide three this evening."),
            ("Me", "Great. And remember, I am at the doctor tomorrow morning, so I will come in late."),
        ),
        people=(Person("Marco", 230, "#2e86c1"),),
        props=WHITEBOARD,
        facts=("Marco will fix slide three this evening.",),
    ),
    Scene(
        "office-see-you",
        "Meeting room",
        "Northwind Labs",
        "Agreeing when to meet tomorrow",
        (
            ("Marco", "No problem. See you tomorrow at around eleven then."),
            ("Me", "Yes. See you at eleven."),
        ),
        people=(Person("Marco", 230, "#2e86c1"),),
        props=WHITEBOARD,
        facts=("Plan: meet Marco tomorrow at around eleven.",),
    ),
    Scene(
        "office-reminders",
        "Northwind Labs",
        "my desk",
        "Reminders for later today",
        (
            ("Me", "Note to self. Pick up the blue notebook at the cafe at lunch."),
            ("Me", "And buy milk on the way home."),
            ("Me", "My keys are in my desk drawer. Do not forget them tonight."),
        ),
        props=(
            *OFFICE,
            Prop("phone", 120, 50, "reminders", text=("REMINDERS", "notebook @ cafe", "buy milk")),
        ),
        facts=("Reminders: pick up the notebook at lunch; buy milk on the way home.",),
    ),
    Scene(
        "office-headphones",
        "Northwind Labs",
        "my desk",
        "Starting the budget report with headphones on",
        (
            ("Me", "Now I am starting the budget report."),
            ("Me", "I like working with music, so I am putting my headphones on."),
        ),
        props=(
            *OFFICE,
            Prop("laptop", 120, 140, "budget report"),
            Prop("headphones", 230, 150, "headphones", frames=(0, 9)),
        ),
        facts=("Preference: I like working with music (headphones on).",),
    ),
    Scene(
        "office-focus",
        "Northwind Labs",
        "my desk",
        "Working on the budget report",
        (
            ("Me", "The budget report is due on Thursday. I will finish the first draft before lunch."),
            ("Me", "Quiet work time now."),
        ),
        props=(*OFFICE, Prop("laptop", 120, 140, "budget report")),
        facts=("Plan: the budget report is due Thursday; first draft before lunch.",),
    ),
)

# The shortened sample (2 minutes, 4 windows) for the CI e2e test with real models.
SHORT_SCENES = ("kitchen-latte-habit", "hallway-keys", "cafe-order", "office-marco-slides")

SAMPLE_QUESTIONS = (
    (
        "episodic",
        "Where did I leave my blue notebook?",
        "At the Corner Café, on the window table (kept behind the counter now).",
    ),
    ("episodic", "Where are my keys?", "In the drawer of my desk at Northwind Labs."),
    ("episodic", "Who reminded me about the doctor's appointment?", "Katrina, my roommate."),
    ("semantic", "What do I drink every morning?", "A cappuccino (one coffee a day)."),
    ("semantic", "Who is Marco?", "My colleague at Northwind Labs."),
    ("time", "What do I have tomorrow morning?", "A doctor's appointment at 9:00 (Wednesday 12 March)."),
    ("time", "When is Marco's presentation?", "Friday (14 March) at 2 pm."),
)
SHORT_QUESTIONS = (
    ("episodic", "Who did I talk to in the kitchen?", "Katrina, my roommate."),
    ("semantic", "What do I drink every morning?", "A cappuccino."),
    ("time", "When is Marco's presentation?", "Friday at 2 pm."),
)

# ---------------------------------------------------------------- the evening of the same day

LIVING_ROOM = (Prop("window", 20, 38, "window: evening"), Prop("table", 30, 165, "sofa", color="#8d6e63"))
BEDROOM = (Prop("window", 20, 38, "window: night"), Prop("table", 150, 150, "bedside table", color="#a1887f"))
MARKET = (
    Prop("board", 8, 38, "GREEN LEAF MARKET", text=("Milk $2.40", "Eggs $3.60", "Bread $3.20")),
    Prop("counter", 0, 155, "till", color="#558b2f"),
)
BUS_STOP = (
    Prop("sign", 40, 120, "Bus 14 · every 10 min"),
    Prop("building", 170, 35, "Maple St. 40", color="#90a4ae"),
)
BUS = (Prop("window", 20, 38, "bus window"), Prop("window", 180, 38, "bus window"))
SOPHIE_CALL = ("Calling", "Sophie", "00:31")

EVENING_SCENES: tuple[Scene, ...] = (
    Scene(
        "office-leaving",
        "Northwind Labs",
        "my desk",
        "Closing the laptop at the end of the day",
        (
            ("Me", "It is half past five. I am saving the budget report and closing my laptop."),
            ("Marco", "Slide three is fixed. The new budget numbers are in."),
            ("Me", "Great work, Marco. See you tomorrow at eleven."),
        ),
        people=(MARCO,),
        props=(*OFFICE, Prop("laptop", 120, 140, "budget report")),
        facts=("Marco fixed slide three (the new budget numbers are in).",),
    ),
    Scene(
        "office-keys-bag",
        "Northwind Labs",
        "my desk",
        "Keys out of the drawer, into my jacket",
        (
            ("Me", "I am taking my keys out of the desk drawer and putting them in my jacket pocket."),
            ("Me", "My blue notebook is in my bag. I picked it up from the cafe at lunch."),
        ),
        props=(
            *OFFICE,
            Prop("drawer", 120, 150, "desk drawer"),
            Prop("keys", 140, 140, "keys", frames=(0, 8)),
            Prop("notebook", 230, 150, "blue notebook", color="#1f4e9c"),
        ),
        facts=("My keys are in my jacket pocket.", "I picked up the blue notebook at lunch; it is in my bag."),
    ),
    Scene(
        "bus-stop",
        "Maple Street",
        "bus stop",
        "Waiting for the bus home",
        (
            ("Me", "I am waiting at the bus stop on Maple Street."),
            ("Me", "I am taking the number fourteen bus home. It comes every ten minutes."),
        ),
        props=BUS_STOP,
        facts=("I take the number 14 bus home; it comes every ten minutes.",),
    ),
    Scene(
        "bus-sophie",
        "Bus 14",
        "phone call",
        "Sophie calls about Sunday",
        (
            ("Sophie", "Hi, it is Sophie. Are you still coming to dinner on Sunday?"),
            ("Me", "Yes, of course. What time?"),
            ("Sophie", "Dinner is at six. It is Mum's sixtieth birthday."),
        ),
        props=(*BUS, Prop("phone", 120, 60, "call", text=SOPHIE_CALL)),
        facts=("Plan: family dinner on Sunday at six, for Mum's sixtieth birthday.",),
    ),
    Scene(
        "bus-sophie-cake",
        "Bus 14",
        "phone call",
        "What I will bring on Sunday",
        (
            ("Me", "I will bring a chocolate cake for dessert."),
            ("Sophie", "Perfect. Dad is cooking roast chicken."),
            ("Me", "See you on Sunday, Sophie."),
        ),
        props=(*BUS, Prop("phone", 120, 60, "call", text=SOPHIE_CALL)),
        facts=("I will bring a chocolate cake on Sunday; Dad is cooking roast chicken.",),
    ),
    Scene(
        "market-aisle",
        "Green Leaf Market",
        "aisle",
        "Shopping on the way home",
        (
            ("Me", "I am at the Green Leaf Market next to my flat."),
            ("Me", "I am buying milk, eggs and a loaf of bread."),
        ),
        props=(*MARKET, Prop("carton", 120, 118, "MILK", color="#f5deb3")),
        facts=("I bought milk, eggs and bread at the Green Leaf Market.",),
    ),
    Scene(
        "market-till",
        "Green Leaf Market",
        "till",
        "Paying Tom at the till",
        (
            ("Tom", "Hello again. That comes to nine dollars twenty."),
            ("Me", "I am paying with cash today."),
            ("Tom", "Do you want a bag?"),
            ("Me", "No thanks, Tom. I have my own bag."),
        ),
        people=(Person("Tom", 215, "#558b2f"),),
        props=MARKET,
        facts=("The shopping came to $9.20, paid in cash; I brought my own bag.",),
    ),
    Scene(
        "street-coffee-beans",
        "Maple Street",
        "outside",
        "Walking home without coffee beans",
        (
            ("Me", "Oh no, I forgot the coffee beans."),
            ("Me", "The market was out of them anyway. I will buy coffee beans at the Corner Cafe tomorrow."),
        ),
        props=STREET,
        facts=("To do: buy coffee beans at the Corner Café tomorrow.",),
    ),
    Scene(
        "kitchen-plumber-note",
        "Kitchen",
        "home",
        "The plumber's note on the fridge",
        (
            ("Me", "I am home. There is a note from the plumber on the fridge."),
            ("Me", "The plumber fixed the kitchen tap. The bill is eighty five dollars."),
        ),
        props=(*KITCHEN, Prop("note", 272, 80, "plumber's note", color="#fff59d")),
        facts=("The plumber fixed the kitchen tap; his bill is $85.",),
    ),
    Scene(
        "hallway-jacket",
        "Hallway",
        "home",
        "Jacket by the front door; the spare key is back",
        (
            ("Me", "The spare key is back on the hallway shelf."),
            ("Me", "I am hanging my jacket by the front door, with my keys in the pocket."),
        ),
        props=(*HALLWAY, Prop("keys", 130, 108, "spare key")),
        facts=("My jacket hangs by the front door, my keys in its pocket.",),
    ),
    Scene(
        "kitchen-dinner",
        "Kitchen",
        "home",
        "Cooking dinner alone",
        (
            ("Me", "Katrina is still at her pottery class."),
            ("Me", "I am cooking pasta with tomato sauce for dinner."),
        ),
        props=KITCHEN,
        facts=("I cooked pasta with tomato sauce for dinner.",),
    ),
    Scene(
        "kitchen-katrina-message",
        "Kitchen",
        "home",
        "A message from Katrina",
        (
            ("Me", "Katrina sent me a message. She made a blue bowl at pottery today."),
            ("Me", "She says she will be home at nine."),
        ),
        props=(*KITCHEN, Prop("phone", 110, 60, "message", text=("Katrina:", "made a blue bowl!", "home at 9"))),
        facts=("Katrina made a blue bowl at pottery.",),
    ),
    Scene(
        "living-room-daniel",
        "Living room",
        "phone call",
        "Daniel asks about tennis",
        (
            ("Daniel", "Hey, it is Daniel. Do you want to play tennis on Saturday morning?"),
            ("Me", "Yes, I would love to. What time?"),
            ("Daniel", "Ten o'clock at Riverside Park. I will book the court."),
        ),
        props=(*LIVING_ROOM, Prop("phone", 120, 60, "call", text=("Calling", "Daniel", "01:05"))),
        facts=("Plan: tennis with Daniel on Saturday at ten, Riverside Park; Daniel books the court.",),
    ),
    Scene(
        "living-room-train",
        "Living room",
        "laptop",
        "Booking a train to Chicago",
        (
            ("Me", "I am booking a train ticket to Chicago for the conference next Monday."),
            ("Me", "The ticket costs one hundred and twenty dollars. The train leaves at seven in the morning."),
        ),
        props=(*LIVING_ROOM, Prop("laptop", 120, 140, "train tickets")),
        facts=("Plan: train to Chicago next Monday at 7:00 for a conference; the ticket cost $120.",),
    ),
    Scene(
        "living-room-book",
        "Living room",
        "sofa",
        "Reading on the sofa",
        (
            ("Me", "Now I am reading my book on the sofa. It is called The Silent River."),
            ("Me", "I am on chapter twelve. It is a mystery story."),
        ),
        props=(*LIVING_ROOM, Prop("notebook", 120, 140, "The Silent River", color="#37474f")),
        facts=("I am reading The Silent River, a mystery, at chapter twelve.",),
    ),
    Scene(
        "hallway-katrina-home",
        "Hallway",
        "home",
        "Katrina is home with her bowl",
        (
            ("Katrina", "Hi, I am home. Look at my new bowl!"),
            ("Me", "It is beautiful. How was pottery?"),
            ("Katrina", "Great. Next week we are making cups."),
        ),
        people=(KATRINA,),
        props=(*HALLWAY, Prop("bowl", 150, 120, "blue bowl", color="#1e88e5")),
        facts=("Next week Katrina's pottery class makes cups.",),
    ),
    Scene(
        "kitchen-cat",
        "Kitchen",
        "home",
        "Katrina asks me to feed the cat",
        (
            ("Katrina", "Can you feed our cat Pepper tomorrow morning? I leave for the bakery at six."),
            ("Me", "Sure. How much food does Pepper get?"),
            ("Katrina", "Half a cup of dry food, and fresh water."),
        ),
        people=(KATRINA,),
        props=KITCHEN,
        facts=("To do: feed Pepper the cat tomorrow morning (half a cup of dry food, fresh water).",),
    ),
    Scene(
        "kitchen-milk",
        "Kitchen",
        "home",
        "The milk is in the fridge",
        (
            ("Katrina", "Did you remember the milk?"),
            ("Me", "Yes, it is in the fridge. I also bought eggs and bread."),
            ("Katrina", "Thank you!"),
        ),
        people=(KATRINA,),
        props=(*KITCHEN, Prop("carton", 250, 118, "MILK", color="#f5deb3")),
        facts=("The milk is in the fridge.",),
    ),
    Scene(
        "bedroom-alarm",
        "Bedroom",
        "home",
        "Setting the alarm, charging the phone",
        (
            ("Me", "I am setting my alarm for seven thirty. The doctor is at nine."),
            ("Me", "I am charging my phone on the bedside table."),
        ),
        props=(*BEDROOM, Prop("phone", 170, 60, "alarm", text=("ALARM", "7:30", "Wed"))),
        facts=("My alarm is set for 7:30; my phone charges on the bedside table.",),
    ),
    Scene(
        "bedroom-night",
        "Bedroom",
        "home",
        "Good night",
        (
            ("Me", "I am putting my watch next to my phone."),
            ("Me", "Good night. Tomorrow, the doctor at nine, then the office at eleven."),
        ),
        props=BEDROOM,
        facts=("Tomorrow: the doctor at nine, then the office at eleven.",),
    ),
)

EVENING_QUESTIONS = (
    ("episodic", "Where are my keys now?", "In my jacket pocket; the jacket hangs by the front door."),
    ("episodic", "How did I get home?", "The number 14 bus."),
    ("time", "When is Mum's birthday dinner?", "Sunday at six."),
    ("episodic", "What did the plumber fix?", "The kitchen tap (bill: $85)."),
    ("time", "When am I playing tennis with Daniel?", "Saturday at ten, at Riverside Park."),
)


# ---------------------------------------------------------------- the next morning

CLINIC = (
    Prop("board", 8, 38, "RIVERSIDE CLINIC", text=("Oak Avenue 7", "Doctor Lee: room 4")),
    Prop("counter", 0, 155, "reception", color="#80cbc4"),
)
CLINIC_ROOM = (Prop("window", 20, 38, "room 4"), Prop("table", 30, 165, "doctor's desk", color="#b0bec5"))
PHARMACY = (
    Prop("board", 8, 38, "PHARMACY", text=("Vitamin D $12.00",)),
    Prop("counter", 0, 155, "counter", color="#a5d6a7"),
)
OAK_AVENUE = (
    Prop("building", 10, 50, "Riverside Clinic", color="#80cbc4"),
    Prop("sign", 150, 150, "Oak Avenue"),
)
DOCTOR_LEE = Person("Doctor Lee", 215, "#eceff1")
KATRINA_CALL = ("Calling", "Katrina", "00:42")

NEXT_MORNING_SCENES: tuple[Scene, ...] = (
    Scene(
        "kitchen-feeding-pepper",
        "Kitchen",
        "home",
        "Feeding Pepper before leaving",
        (
            ("Me", "It is Wednesday morning. Katrina already left for the bakery."),
            ("Me", "I am feeding Pepper half a cup of dry food and fresh water."),
        ),
        props=(*KITCHEN, Prop("cup", 150, 130, "Pepper's bowl", color="#ffcc80")),
        facts=("I fed Pepper on Wednesday morning (half a cup of dry food, fresh water).",),
    ),
    Scene(
        "kitchen-breakfast",
        "Kitchen",
        "home",
        "Toast and orange juice",
        (
            ("Me", "For breakfast I am having toast with honey and a glass of orange juice."),
            ("Me", "There is no coffee at home. We are still out of coffee beans."),
        ),
        props=(*KITCHEN, Prop("cup", 120, 130, "orange juice", color="#ffa726")),
        facts=("Breakfast: toast with honey and orange juice; no coffee beans at home.",),
    ),
    Scene(
        "hallway-umbrella",
        "Hallway",
        "home",
        "Taking the green umbrella",
        (
            ("Me", "It is raining, so I am taking the green umbrella from the hallway."),
            ("Me", "My keys are still in my jacket pocket."),
        ),
        props=(*HALLWAY, Prop("carton", 130, 100, "green umbrella", color="#43a047")),
        facts=("I took the green umbrella because it was raining.",),
    ),
    Scene(
        "oak-avenue",
        "Oak Avenue",
        "outside",
        "Walking to the clinic in the rain",
        (
            ("Me", "I am walking to the Riverside Clinic on Oak Avenue."),
            ("Me", "It is a fifteen minute walk from our flat."),
        ),
        props=OAK_AVENUE,
        facts=("The Riverside Clinic is on Oak Avenue, a fifteen-minute walk from home.",),
    ),
    Scene(
        "clinic-reception",
        "Riverside Clinic",
        "reception",
        "Checking in for the appointment",
        (
            ("Nina", "Good morning. Do you have an appointment?"),
            ("Me", "Yes, at nine with Doctor Lee."),
            ("Nina", "Please take a seat. Doctor Lee is in room four."),
        ),
        people=(Person("Nina", 215, "#ce93d8"),),
        props=CLINIC,
        facts=("My appointment was at nine with Doctor Lee, in room four.",),
    ),
    Scene(
        "clinic-checkup",
        "Riverside Clinic",
        "room 4",
        "The check-up",
        (
            ("Doctor Lee", "Your blood pressure is normal. How is your back?"),
            ("Me", "Much better, thank you."),
            ("Doctor Lee", "Good. Keep doing the stretches every evening."),
        ),
        people=(DOCTOR_LEE,),
        props=CLINIC_ROOM,
        facts=("Blood pressure normal; my back is better; keep doing the stretches every evening.",),
    ),
    Scene(
        "clinic-prescription",
        "Riverside Clinic",
        "room 4",
        "A prescription and the next visit",
        (
            ("Doctor Lee", "I am giving you vitamin D. Take one tablet a day with breakfast."),
            ("Doctor Lee", "Come back in three months."),
            ("Me", "Thank you, Doctor Lee."),
        ),
        people=(DOCTOR_LEE,),
        props=CLINIC_ROOM,
        facts=("Doctor Lee prescribed vitamin D, one tablet a day with breakfast; next visit in three months.",),
    ),
    Scene(
        "pharmacy",
        "Pharmacy",
        "counter",
        "Buying the vitamin D",
        (
            ("Me", "I am at the pharmacy next to the clinic."),
            ("Me", "The vitamin D tablets cost twelve dollars."),
        ),
        props=PHARMACY,
        facts=("The vitamin D tablets cost $12 at the pharmacy next to the clinic.",),
    ),
    Scene(
        "cafe-beans",
        "Corner Cafe",
        "counter",
        "Coffee beans at last",
        (
            ("Emma", "Good morning! The usual cappuccino?"),
            ("Me", "Yes please, Emma. And a bag of coffee beans."),
            ("Emma", "That is sixteen dollars fifty together."),
        ),
        people=(EMMA,),
        props=CAFE,
        facts=("I bought a cappuccino and a bag of coffee beans at the Corner Café for $16.50.",),
    ),
    Scene(
        "cafe-notebook",
        "Corner Cafe",
        "window table",
        "Writing a reminder",
        (
            ("Me", "I am sitting at the window table with my cappuccino."),
            ("Me", "I am writing in my blue notebook: call the bank about my new card."),
        ),
        props=(*CAFE_TABLE, Prop("notebook", 150, 150, "blue notebook", color="#1f4e9c")),
        facts=("To do: call the bank about my new card (written in the blue notebook).",),
    ),
    Scene(
        "cafe-katrina-call",
        "Corner Cafe",
        "phone call",
        "Katrina asks for cat food",
        (
            ("Katrina", "Hi, it is Katrina. The bakery needs me until eight tonight."),
            ("Katrina", "Can you buy cat food on the way home?"),
            ("Me", "Yes, I will get it after work."),
        ),
        props=(*CAFE_TABLE, Prop("phone", 120, 60, "call", text=KATRINA_CALL)),
        facts=("Katrina works at the bakery until eight tonight.", "To do: buy cat food on the way home."),
    ),
    Scene(
        "office-boston",
        "Northwind Labs",
        "my desk",
        "The Boston meeting moves",
        (
            ("Marco", "Good morning. The client from Boston moved our meeting to Thursday at three."),
            ("Me", "Thursday at three. I will put it in my calendar."),
        ),
        people=(MARCO,),
        props=OFFICE,
        facts=("The meeting with the client from Boston moved to Thursday at three.",),
    ),
    Scene(
        "office-lunch",
        "Northwind Labs",
        "my desk",
        "Lunch plans with Marco",
        (
            ("Marco", "Do you want lunch at the Thai place at one?"),
            ("Me", "Sure. One o'clock at the Thai place."),
        ),
        people=(MARCO,),
        props=OFFICE,
        facts=("Plan: lunch with Marco at the Thai place at one.",),
    ),
    Scene(
        "office-umbrella",
        "Northwind Labs",
        "my desk",
        "Putting things away",
        (
            ("Me", "I am leaving the green umbrella under my desk to dry."),
            ("Me", "The vitamin D tablets are in my desk drawer."),
        ),
        props=(
            *OFFICE,
            Prop("drawer", 120, 150, "desk drawer"),
            Prop("carton", 200, 160, "green umbrella", color="#43a047"),
        ),
        facts=("The green umbrella is under my desk; the vitamin D tablets are in my desk drawer.",),
    ),
    Scene(
        "office-daniel-email",
        "Northwind Labs",
        "laptop",
        "An email from Daniel",
        (
            ("Me", "Daniel sent an email. He booked court number three for Saturday."),
            ("Me", "He will bring the tennis balls."),
        ),
        props=(*OFFICE, Prop("laptop", 120, 140, "email: Daniel")),
        facts=("Daniel booked court three for Saturday's tennis and will bring the balls.",),
    ),
    Scene(
        "office-plan",
        "Northwind Labs",
        "my desk",
        "The rest of the day",
        (
            ("Me", "My plan for today: finish the slides for Friday and call the bank."),
            ("Me", "Then buy cat food and be home before Katrina."),
        ),
        props=(*OFFICE, Prop("notebook", 150, 150, "blue notebook", color="#1f4e9c")),
        facts=("Today: finish Friday's slides, call the bank, buy cat food, be home before Katrina.",),
    ),
)

NEXT_MORNING_QUESTIONS = (
    ("episodic", "What did the doctor prescribe?", "Vitamin D, one tablet a day with breakfast."),
    ("episodic", "Did I get the coffee beans?", "Yes, at the Corner Café (with a cappuccino, $16.50)."),
    ("time", "When is the meeting with the client from Boston?", "Thursday at three."),
    ("episodic", "Where is my umbrella?", "Under my desk at Northwind Labs."),
    ("time", "When do I go back to the doctor?", "In three months."),
)


# ---------------------------------------------------------------- audio


@dataclass(frozen=True)
class PlacedLine:
    """A synthesised line and where it sits on the session's timeline."""

    window: int
    speaker: str
    text: str
    start: float
    samples: array.array[int] = field(repr=False)
    rate: int

    @property
    def end(self) -> float:
        return self.start + len(self.samples) / self.rate


def synthesize(
    speaker: str, text: str, workdir: Path, voices: dict[str, tuple[str, int]] | None = None
) -> tuple[array.array[int], int]:
    """One line of speech as 16-bit mono samples and their rate, from espeak-ng (`voices`: another cast's)."""
    voice, speed = (VOICES if voices is None else voices)[speaker]
    out = workdir / "line.wav"
    cmd = ["espeak-ng", "-v", voice, "-s", str(speed), "-g", str(WORD_GAP), "-w", str(out), text]
    subprocess.run(cmd, check=True, capture_output=True)
    with wave.open(str(out), "rb") as wav:
        if wav.getnchannels() != 1 or wav.getsampwidth() != 2:
            raise RuntimeError(f"espeak-ng wrote an unexpected format for {voice}")
        samples = array.array("h")
        samples.frombytes(wav.readframes(wav.getnframes()))
        return samples, wav.getframerate()


def place_lines(
    scenes: Sequence[Scene], workdir: Path, voices: dict[str, tuple[str, int]] | None = None
) -> list[PlacedLine]:
    """Synthesises every line and lays them out inside their own window, failing on overflow (`voices`: another
    cast's, as bench/worldgen's)."""
    placed: list[PlacedLine] = []
    for index, scene in enumerate(scenes):
        cursor = index * WINDOW_SECONDS + LEAD_IN_SECONDS
        for speaker, text in scene.lines:
            samples, rate = synthesize(speaker, text, workdir, voices)
            line = PlacedLine(index, speaker, text, cursor, samples, rate)
            limit = (index + 1) * WINDOW_SECONDS - TAIL_SECONDS
            if line.end > limit:
                raise SystemExit(f"scene {scene.key!r}: speech runs to {line.end:.1f}s, past {limit:.1f}s")
            placed.append(line)
            cursor = line.end + LINE_GAP_SECONDS
    return placed


def write_audio(lines: Sequence[PlacedLine], window_count: int, target: Path, workdir: Path) -> None:
    """Mixes the lines onto one silent track and encodes it as AAC mono 16 kHz in an m4a."""
    rate = lines[0].rate
    track = array.array("h", bytes(2 * window_count * WINDOW_SECONDS * rate))
    for line in lines:
        offset = round(line.start * rate)
        track[offset : offset + len(line.samples)] = line.samples
    raw = workdir / "session.wav"
    with wave.open(str(raw), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(track.tobytes())
    cmd = [
        "ffmpeg", "-loglevel", "error", "-y", "-i", str(raw),
        "-ac", "1", "-ar", "16000", "-c:a", "aac", "-b:a", AUDIO_BITRATE,
        "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
        str(target),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)


# ---------------------------------------------------------------- frames


class Painter:
    """Draws one frame of a scene: place banner, clock, set, people, objects, caption bar."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.fonts = {size: load_font(size) for size in (9, 11, 13)}

    def frame(self, scene: Scene, window: int, k: int) -> bytes:
        from io import BytesIO

        from PIL import Image, ImageDraw

        image = Image.new("RGB", FRAME_SIZE, background(scene))
        draw = ImageDraw.Draw(image)
        # A small, smooth head movement from frame to frame, as a worn camera would show.
        dx = round(5 * math.sin(k / 2.5))
        dy = round(2 * math.cos(k / 3.0))
        floor_y = 175 + dy
        draw.rectangle((0, floor_y, FRAME_SIZE[0], FRAME_SIZE[1]), fill=floor_color(scene))
        for prop in scene.props:
            if prop.frames[0] <= k < prop.frames[1]:
                self.prop(draw, prop, dx, dy)
        for person in scene.people:
            self.person(draw, person, dx, dy)
        self.banner(draw, scene, window, k)
        buffer = BytesIO()
        image.save(buffer, "JPEG", quality=JPEG_QUALITY, optimize=True)
        return buffer.getvalue()

    def banner(self, draw: ImageDraw.ImageDraw, scene: Scene, window: int, k: int) -> None:
        width, height = FRAME_SIZE
        at = self.start + timedelta(seconds=window * WINDOW_SECONDS + k * WINDOW_SECONDS / FRAMES_PER_WINDOW)
        draw.rectangle((0, 0, width, 20), fill="#212121")
        draw.text((5, 3), f"{scene.place.upper()} · {scene.setting}", fill="#ffffff", font=self.fonts[13])
        draw.text((width - 58, 5), at.strftime("%H:%M:%S"), fill="#ffeb3b", font=self.fonts[11])
        draw.rectangle((0, height - 18, width, height), fill="#000000")
        draw.text((5, height - 15), scene.note, fill="#ffffff", font=self.fonts[11])

    def person(self, draw: ImageDraw.ImageDraw, person: Person, dx: int, dy: int) -> None:
        x, top = person.x + dx, 70 + dy
        draw.ellipse((x - 14, top, x + 14, top + 28), fill="#f1c27d", outline="#5d4037")
        draw.rectangle((x - 20, top + 30, x + 20, top + 100), fill=person.shirt)
        self.tag(draw, person.name, x, top - 14, "#fff59d")

    def tag(self, draw: ImageDraw.ImageDraw, text: str, cx: int, y: int, fill: str = "#ffffff") -> None:
        font = self.fonts[11]
        left, _, right, _ = draw.textbbox((0, 0), text, font=font)
        half = int(right - left) // 2 + 3
        cx = min(max(cx, half + 2), FRAME_SIZE[0] - half - 2)  # keep the whole label in the frame
        draw.rectangle((cx - half, y, cx + half, y + 13), fill=fill, outline="#000000")
        draw.text((cx - half + 3, y), text, fill="#000000", font=font)

    def prop(self, draw: ImageDraw.ImageDraw, prop: Prop, dx: int, dy: int) -> None:
        x, y, kind = prop.x + dx, prop.y + dy, prop.kind
        label_y: int | None = None
        if kind == "window":
            draw.rectangle((x, y, x + 90, y + 60), fill="#bbdefb", outline="#ffffff", width=3)
            draw.line((x + 45, y, x + 45, y + 60), fill="#ffffff", width=2)
            label_y = y + 62
        elif kind == "counter" or kind == "table":
            draw.rectangle((x, y, x + 200, y + 14), fill=prop.color, outline="#4e342e")
            label_y = y + 16
        elif kind == "fridge":
            draw.rectangle((x, y, x + 48, y + 115), fill="#eceff1", outline="#607d8b", width=2)
            draw.line((x, y + 40, x + 48, y + 40), fill="#607d8b", width=2)
            label_y = y + 117
        elif kind == "door":
            draw.rectangle((x, y, x + 60, y + 130), fill="#8d6e63", outline="#3e2723", width=2)
            draw.ellipse((x + 48, y + 65, x + 54, y + 71), fill="#ffd54f")
            label_y = y + 132
        elif kind == "shelf":
            draw.rectangle((x, y, x + 130, y + 8), fill=prop.color)
            label_y = y + 10
        elif kind == "building":
            draw.rectangle((x, y, x + 140, y + 120), fill=prop.color, outline="#37474f")
            for row in range(3):
                for col in range(4):
                    wx, wy = x + 12 + col * 32, y + 30 + row * 28
                    draw.rectangle((wx, wy, wx + 18, wy + 16), fill="#fff9c4")
            self.tag(draw, prop.label, x + 70, y + 6)
        elif kind == "sign":
            draw.rectangle((x, y, x + 4, y + 30), fill="#455a64")
            self.tag(draw, prop.label, x + 2, y - 12, "#81c784")
        elif kind == "board":
            draw.rectangle((x, y, x + 160, y + 70), fill="#263238" if prop.color != "#fafafa" else "#fafafa",
                           outline="#8d6e63", width=3)  # fmt: skip
            ink = "#ffffff" if prop.color != "#fafafa" else "#0d47a1"
            draw.text((x + 6, y + 4), prop.label, fill=ink, font=self.fonts[11])
            for row, text in enumerate(prop.text):
                draw.text((x + 6, y + 20 + row * 15), text, fill=ink, font=self.fonts[11])
        elif kind == "phone":
            draw.rounded_rectangle((x, y, x + 90, y + 80), radius=8, fill="#212121")
            draw.rectangle((x + 5, y + 8, x + 85, y + 72), fill="#e3f2fd")
            for row, text in enumerate(prop.text):
                draw.text((x + 8, y + 12 + row * 18), text, fill="#0d47a1", font=self.fonts[11])
        elif kind in ("mug", "cup"):
            draw.rectangle((x, y, x + 16, y + 20), fill=prop.color, outline="#424242")
            if kind == "mug":
                draw.arc((x + 12, y + 4, x + 24, y + 14), -90, 90, fill="#424242", width=2)
            label_y = y + 22
        elif kind == "carton":
            draw.rectangle((x, y, x + 22, y + 34), fill=prop.color, outline="#795548")
            label_y = y + 36
        elif kind == "keys":
            draw.ellipse((x, y, x + 12, y + 12), outline="#fbc02d", width=2)
            draw.line((x + 10, y + 10, x + 24, y + 16), fill="#fbc02d", width=3)
            label_y = y + 16
        elif kind == "notebook":
            draw.rectangle((x, y, x + 34, y + 24), fill="#1f4e9c", outline="#0d2a5c")
            for row, text in enumerate(prop.text):
                draw.text((x + 38, y + row * 12), text, fill="#0d2a5c", font=self.fonts[9])
            label_y = y + 26
        elif kind == "laptop":
            draw.rectangle((x, y - 30, x + 60, y), fill="#cfd8dc", outline="#455a64", width=2)
            draw.polygon([(x - 6, y), (x + 66, y), (x + 72, y + 8), (x - 12, y + 8)], fill="#90a4ae")
            label_y = y + 10
        elif kind == "plant":
            draw.rectangle((x, y + 14, x + 18, y + 28), fill="#a1887f")
            for cx, cy in ((x + 4, y + 6), (x + 12, y + 2), (x + 9, y + 10)):
                draw.ellipse((cx - 6, cy - 6, cx + 6, cy + 6), fill="#43a047")
            label_y = y + 30
        elif kind == "sink":
            draw.rectangle((x, y, x + 50, y + 10), fill="#b0bec5", outline="#607d8b")
            label_y = y + 12
        elif kind == "drawer":
            draw.rectangle((x, y, x + 70, y + 22), fill="#78909c", outline="#37474f")
            draw.rectangle((x + 28, y + 9, x + 42, y + 13), fill="#eceff1")
            label_y = y + 24
        elif kind == "headphones":
            draw.arc((x, y, x + 30, y + 30), 180, 360, fill="#212121", width=4)
            draw.rectangle((x - 3, y + 12, x + 5, y + 24), fill="#212121")
            draw.rectangle((x + 25, y + 12, x + 33, y + 24), fill="#212121")
            label_y = y + 26
        else:  # a bag or anything else: a labelled box
            draw.rectangle((x, y, x + 40, y + 26), fill=prop.color, outline="#212121")
            label_y = y + 28
        if label_y is not None and prop.label:
            self.tag(draw, prop.label, x + LABEL_CENTRE.get(kind, 12), label_y)


def background(scene: Scene) -> str:
    """Wall colour per place, so the place also reads from colour alone."""
    return {"Kitchen": "#fff3e0", "Hallway": "#efebe9", "Maple Street": "#81d4fa", "Corner Cafe": "#d7ccc8",
            "Northwind Labs": "#e8eaf6", "Meeting room": "#e0f2f1", "Bus 14": "#cfd8dc",
            "Green Leaf Market": "#dcedc8", "Living room": "#f3e5f5", "Bedroom": "#e1f5fe"}.get(
        scene.place, "#eeeeee")  # fmt: skip


def floor_color(scene: Scene) -> str:
    return {"Maple Street": "#9e9e9e", "Kitchen": "#bcaaa4"}.get(scene.place, "#a1887f")


def load_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans when installed (Debian's fonts-dejavu-core), else Pillow's built-in font."""
    from PIL import ImageFont

    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size)


# ---------------------------------------------------------------- session


@dataclass(frozen=True)
class Recording:
    """One sample recording: its scenes, when it starts, and what its README says about it."""

    name: str
    session_id: str
    start: datetime
    scenes: Sequence[Scene]
    summary: str
    user_hint: str
    cast: tuple[str, ...]
    questions: tuple[tuple[str, str, str], ...]
    notes: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "" if self.name == "sample-session" else f" --{self.name.removesuffix('-session')}"


def recordings() -> dict[str, Recording]:
    """The committed sample recordings by directory name under `examples/`."""
    morning = datetime(2025, 3, 11, 8, 0, 0, tzinfo=UTC)  # a Tuesday
    by_key = {scene.key: scene for scene in SCENES}
    morning_cast = (
        f"- **I** — the wearer (voice: espeak-ng `{VOICES['Me'][0]}`).",
        f"- **Katrina** — my roommate (`{VOICES['Katrina'][0]}`); **Emma** — barista at the Corner Café"
        f" (`{VOICES['Emma'][0]}`);",
        f"  **Marco** — my colleague at Northwind Labs (`{VOICES['Marco'][0]}`).",
        "- Home (kitchen, hallway) → Maple Street → Corner Café → Northwind Labs (3rd floor office).",
        "- Objects: milk, coffee mug, plants, keys, spare key, blue notebook, phone, laptop,",
        "  headphones.",
    )
    morning_hint = (
        "A Tuesday morning: home with my roommate Katrina, Corner Cafe, "
        "then the office (Northwind Labs) with my colleague Marco."
    )
    morning_summary = 'A scripted morning of the wearer ("I") on Tuesday 11 March 2025 from 08:00 UTC.'
    return {
        "sample-session": Recording(
            "sample-session",
            "sample-morning-2025-03-11",
            morning,
            SCENES,
            morning_summary,
            morning_hint,
            morning_cast,
            SAMPLE_QUESTIONS,
            (
                "Windows 0–5, 6–11, 12–17 and 18–23 close four 3-minute summaries; windows 0–17 close one",
                "10-minute summary (3 × 3 min), from which semantic triples (habits, relationships) form.",
            ),
        ),
        "short-session": Recording(
            "short-session",
            "sample-morning-short",
            morning,
            [by_key[key] for key in SHORT_SCENES],
            morning_summary,
            morning_hint,
            morning_cast,
            SHORT_QUESTIONS,
        ),
        "evening-session": Recording(
            "evening-session",
            "sample-evening-2025-03-11",
            datetime(2025, 3, 11, 17, 30, 0, tzinfo=UTC),
            EVENING_SCENES,
            "The evening of the same Tuesday (11 March 2025, from 17:30 UTC), recorded after the morning of"
            " `sample-session`: ask it over a memory that holds both.",
            "A Tuesday evening: leaving the office, the bus and the market, home with Katrina, calls from "
            "my sister Sophie and my friend Daniel.",
            (
                *morning_cast[:3],
                f"- **Sophie** — my sister (`{VOICES['Sophie'][0]}`); **Tom** — at the till of the Green Leaf"
                f" Market (`{VOICES['Tom'][0]}`);",
                f"  **Daniel** — a friend (`{VOICES['Daniel'][0]}`); **Pepper** — our cat (not heard).",
                "- Northwind Labs → the Maple Street bus stop → bus 14 → Green Leaf Market → home (kitchen,"
                " hallway, living room, bedroom).",
                "- Objects: keys, jacket, blue notebook, bag, milk, eggs, bread, the plumber's note, a blue bowl,",
                "  laptop, a book, phone, watch.",
            ),
            EVENING_QUESTIONS,
            (
                "Windows 0–5, 6–11 and 12–17 close three 3-minute summaries; windows 0–17 close one",
                "10-minute summary (3 × 3 min).",
            ),
        ),
        "next-morning-session": Recording(
            "next-morning-session",
            "sample-morning-2025-03-12",
            datetime(2025, 3, 12, 8, 0, 0, tzinfo=UTC),
            NEXT_MORNING_SCENES,
            "The next morning (Wednesday 12 March 2025, from 08:00 UTC), recorded after the morning and the"
            " evening of 11 March: ask it over a memory that holds all three.",
            "A Wednesday morning: feeding the cat, the doctor, the Corner Cafe, then the office with Marco.",
            (
                *morning_cast[:3],
                f"- **Nina** — at the clinic's reception (`{VOICES['Nina'][0]}`); **Doctor Lee** — my doctor"
                f" (`{VOICES['Doctor Lee'][0]}`);",
                "  **Katrina** calls from the bakery; **Daniel** is only written about; **Pepper** — our cat.",
                "- Home (kitchen, hallway) → Oak Avenue → Riverside Clinic → the pharmacy → Corner Café →"
                " Northwind Labs.",
                "- Objects: Pepper's bowl, orange juice, keys, green umbrella, vitamin D tablets, coffee beans,",
                "  blue notebook, phone, laptop.",
            ),
            NEXT_MORNING_QUESTIONS,
            (
                "Windows 0–5 and 6–11 close two 3-minute summaries; at the session's end windows 12–15 close a third",
                "(partial), and the three close one 10-minute summary.",
            ),
        ),
    }


def write_session(recording: Recording, target: Path) -> None:
    """Writes metadata.json, audio.m4a, window_{n}/frame_{k:04d}.jpg, script.jsonl and README.md under `target`,
    in place of what an earlier run wrote there; the question files committed beside them stay."""
    scenes = recording.scenes
    for window_dir in target.glob("window_*"):
        shutil.rmtree(window_dir)
    target.mkdir(parents=True, exist_ok=True)
    painter = Painter(recording.start)
    for index, scene in enumerate(scenes):
        window_dir = target / f"window_{index}"
        window_dir.mkdir()
        for k in range(FRAMES_PER_WINDOW):
            (window_dir / f"frame_{k:04d}.jpg").write_bytes(painter.frame(scene, index, k))
    with tempfile.TemporaryDirectory() as tmp:
        lines = place_lines(scenes, Path(tmp))
        write_audio(lines, len(scenes), target / "audio.m4a", Path(tmp))
    start_ms = int(recording.start.timestamp() * 1000)
    metadata = {
        "session_id": recording.session_id,
        "window_count": len(scenes),
        "video_start_ms": start_ms,
        "audio_start_ms": start_ms,
        "created_at": recording.start.isoformat().replace("+00:00", "Z"),
        "user_hint": recording.user_hint,
    }
    (target / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    (target / "script.jsonl").write_text(script(scenes))
    (target / "README.md").write_text(readme(recording, lines))


def script(scenes: Sequence[Scene]) -> str:
    """What is said, line by line (`script.jsonl`: window, speaker, text): the reference speech
    recognition is scored against (`worldmm eval-speech`)."""
    rows = (
        {"window": index, "speaker": speaker, "text": text}
        for index, scene in enumerate(scenes)
        for speaker, text in scene.lines
    )
    return "".join(json.dumps(row) + "\n" for row in rows)


def readme(recording: Recording, lines: Sequence[PlacedLine]) -> str:
    """The README of a generated session: layout, cast, the timeline and what to ask."""
    scenes = recording.scenes
    minutes = len(scenes) * WINDOW_SECONDS / 60
    out = [
        f"# Sample recording `{recording.session_id}` ({len(scenes)} windows, {minutes:g} minutes)",
        "",
        "Generated by `python scripts/make_sample_session.py" + recording.flag + "` (espeak-ng speech, Pillow frames,",
        "ffmpeg AAC) — do not edit by hand; change the script and regenerate.",
        recording.summary,
        "",
        "## Layout (spec 000 `ingest_session`; mirrors S3 `sessions/{sessionId}/...`)",
        "",
        "- `metadata.json` — `session_id`, `window_count`, `video_start_ms`, `audio_start_ms` (epoch ms,",
        "  equal: audio and video start together), `created_at` (ISO 8601 UTC), `user_hint`.",
        f"- `audio.m4a` — the whole session's audio, AAC mono 16 kHz {AUDIO_BITRATE}bit/s,"
        f" {len(scenes) * WINDOW_SECONDS} s long.",
        "  Every line is spoken inside the 30-second window whose frames show its scene",
        f"  (window `n` covers `[30·n, 30·(n+1))` s; each line starts ≥ {LEAD_IN_SECONDS} s after the window opens",
        f"  and ends ≥ {TAIL_SECONDS} s before it closes).",
        f"- `window_{{n}}/frame_{{k:04d}}.jpg` — windows numbered from 0, {FRAMES_PER_WINDOW} frames each"
        f" (k = 0..{FRAMES_PER_WINDOW - 1}, one every {WINDOW_SECONDS / FRAMES_PER_WINDOW:g} s),",
        f"  {FRAME_SIZE[0]}×{FRAME_SIZE[1]} JPEG: the place and clock on top, named people, labelled objects,",
        "  on-screen text (phone, menu board, whiteboard) and a one-line description at the bottom.",
        "",
        "## Cast and places",
        "",
        *recording.cast,
        "",
        "## Timeline",
        "",
        "| window | clock (UTC) | place | what is seen | what is said |",
        "|---|---|---|---|---|",
    ]
    for index, scene in enumerate(scenes):
        at = (recording.start + timedelta(seconds=index * WINDOW_SECONDS)).strftime("%H:%M:%S")
        said = " ".join(
            f"**{line.speaker}** ({line.start - index * WINDOW_SECONDS:.1f}–"
            f"{line.end - index * WINDOW_SECONDS:.1f} s): {line.text}"
            for line in lines
            if line.window == index
        )
        out.append(f"| {index} | {at} | {scene.place} ({scene.setting}) | {scene.note} | {said} |")
    out += ["", "## Facts the memory should hold", ""]
    out += [f"- {fact}" for scene in scenes for fact in scene.facts]
    out += ["", "## Questions to ask (kind — question — expected answer)", ""]
    out += [f"- {kind} — {question} — {answer}" for kind, question, answer in recording.questions]
    if recording.notes:
        out += ["", *recording.notes]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: regenerate the morning sample, its shortened form (--short), the evening (--evening) or the
    next morning (--next-morning)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--short", action="store_true", help=f"only the {len(SHORT_SCENES)} scenes for CI")
    which.add_argument("--evening", action="store_true", help="the evening of the same day")
    which.add_argument("--next-morning", action="store_true", help="the morning of the next day")
    parser.add_argument("--out", type=Path, help="target directory (default: examples/<its name>)")
    args = parser.parse_args(argv)
    for tool in ("espeak-ng", "ffmpeg"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed: apt-get install -y espeak-ng ffmpeg", file=sys.stderr)
            return 2
    flags = {"short-session": args.short, "evening-session": args.evening, "next-morning-session": args.next_morning}
    name = next((name for name, chosen in flags.items() if chosen), "sample-session")
    recording = recordings()[name]
    target = args.out or ROOT / "examples" / name
    write_session(recording, target)
    print(json.dumps({"target": str(target), "windows": len(recording.scenes), "session_id": recording.session_id}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
